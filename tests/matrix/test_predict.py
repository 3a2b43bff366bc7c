"""matrix/predict.py: the lint's summary lines as check prints them."""

from __future__ import annotations


def test_a_node_two_findings_say_the_same_of_is_named_once():
    """A DynamicQuantizeLSTM that two findings speak for alike (one per target setting, say) is one node, not two."""
    from matrix.predict import summary_lines

    one = {"rule": "int8_constant_into_plugin", "engine": "tensorrt-rtx", "versions": "==1.7.1.116",
           "predicted": "parse fails", "source": "reports/observed/nvidia-h100/rtx-1.7.1.116.jsonl"}
    lint = {"findings": [dict(one, node="LSTM_202_quant"), dict(one, node="LSTM_202_quant"), dict(one, node="c1")]}
    [line] = summary_lines("m", lint)
    assert "2 nodes (LSTM_202_quant, c1)" in line, line

"""Builders that turn each case into swept, seeded ONNX reproducers and write them as bundles."""

"""Input shapes of a user's model: `--shape` (fixed or min,opt,max), defaults for dynamic dimensions, the profile.

    --shape images:1x3x320x320                                  a fixed shape (min = opt = max)
    --shape images:1x3x320x320,4x3x640x640,8x3x640x640          min, opt, max, like trtexec's --minShapes/--optShapes/
                                                                --maxShapes

Checking several models, one `--shape` fixes a dimension only where a model leaves it open (`fit`): a dimension the
model declares keeps its own size, and its bundle says the shape was not applied to it (case.json
`shape_not_applied`); a shape of the wrong rank for an input with an open dimension is still a usage error.

Without `--shape`, a dynamic dimension takes a default, and the bundle says so (case.json `assumed_dims`): the
batch (a dimension that is first in some input) is 1, any other is DEFAULT_DIM. Dimensions of one `dim_param` take
one value, across inputs, whether it comes from `--shape` or a default. Inputs are generated at the opt shape; the
TensorRT-family engines build with an optimization profile of min, opt and max for every dynamic input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

from check import CheckError

DEFAULT_BATCH = 1
# Any other dynamic dimension (sequence length, image side): a multiple of 32, the largest stride of common
# detectors, and a short but real sequence.
DEFAULT_DIM = 64
Dim = Union[int, str]  # a static size, or the name of a dynamic dimension (its dim_param, else "dim<axis>")
UNKNOWN_RANK = ["?"]  # an input declared without any shape


@dataclass(frozen=True)
class InputShape:
    """One input's shapes: the optimization profile's min, opt and max (all three equal for a fixed shape)."""

    min: Tuple[int, ...]
    opt: Tuple[int, ...]
    max: Tuple[int, ...]

    @classmethod
    def fixed(cls, dims: Sequence[int]) -> "InputShape":
        return cls(tuple(dims), tuple(dims), tuple(dims))

    @property
    def is_range(self) -> bool:
        return not (self.min == self.opt == self.max)

    def text(self) -> str:
        """As `--shape` writes it: "1x3x8x8" or "1x3x8x8,4x3x8x8,8x3x8x8"."""
        parts = [self.opt] if not self.is_range else [self.min, self.opt, self.max]
        return ",".join("x".join(map(str, p)) for p in parts)

    def to_json(self) -> Dict[str, List[int]]:
        return {"min": list(self.min), "opt": list(self.opt), "max": list(self.max)}


@dataclass(frozen=True)
class AssumedDim:
    """A dynamic dimension that took a default value because no `--shape` gave it."""

    input: str
    axis: int
    dim: str
    value: int

    def to_json(self) -> Dict[str, Union[str, int]]:
        return {"input": self.input, "axis": self.axis, "dim": self.dim, "value": self.value}


@dataclass(frozen=True)
class NotApplied:
    """A `--shape` that one of several models keeps its own declared sizes against: the whole shape for an input the
    model declares static, else the declared dimensions that kept their size."""

    input: str
    given: str  # the shape as `--shape` wrote it
    declared: Tuple[Dim, ...]
    axes: Tuple[int, ...]  # the dimensions that kept the model's size (every one: a static input)

    def to_json(self) -> Dict[str, object]:
        return {"input": self.input, "given": self.given, "declared": list(self.declared), "axes": list(self.axes)}


def parse_shape(text: str) -> Tuple[str, InputShape]:
    """`NAME:1x3x224x224` or `NAME:MIN,OPT,MAX` -> (name, shape); CheckError naming the rule it breaks."""
    name, _, dims = text.rpartition(":")
    parts = [_dims(p) for p in dims.split(",")]
    if not name or len(parts) not in (1, 3) or any(not p for p in parts):
        raise CheckError(f"--shape {text!r}: write it as NAME:1x3x224x224, or NAME:MIN,OPT,MAX "
                         "(NAME:1x3x224x224,4x3x224x224,8x3x224x224)")
    shape = InputShape.fixed(parts[0]) if len(parts) == 1 else InputShape(*parts)
    if len({len(shape.min), len(shape.opt), len(shape.max)}) != 1:
        raise CheckError(f"--shape {text!r}: min, opt and max have different ranks")
    if any(not lo <= mid <= hi for lo, mid, hi in zip(shape.min, shape.opt, shape.max)):
        raise CheckError(f"--shape {text!r}: each dimension needs min <= opt <= max")
    return name, shape


def parse_shapes(given: Sequence[str]) -> Dict[str, InputShape]:
    """Repeated --shape flags -> {input name: shape}; the same name twice is refused."""
    shapes: Dict[str, InputShape] = {}
    for text in given:
        name, shape = parse_shape(text)
        if name in shapes:
            raise CheckError(f"--shape {name} is given twice")
        shapes[name] = shape
    return shapes


def _dims(text: str) -> Tuple[int, ...]:
    """"1x3x224x224" -> (1, 3, 224, 224); () for anything that is not positive integers joined by x."""
    try:
        values = tuple(int(d) for d in text.strip().lower().split("x"))
    except ValueError:
        return ()
    return values if values and all(v > 0 for v in values) else ()


def as_shape(value: Union[InputShape, Sequence[int]]) -> InputShape:
    """A shape given as a plain list of ints (a fixed shape) or an InputShape."""
    return value if isinstance(value, InputShape) else InputShape.fixed([int(d) for d in value])


def resolve(declared: Mapping[str, Sequence[Dim]], given: Mapping[str, InputShape]
            ) -> Tuple[Dict[str, InputShape], List[AssumedDim]]:
    """Every declared input's shapes, from `--shape` where given, else its static dims and the defaults; CheckError
    for a given shape that does not fit, or an input with no declared shape and no `--shape`."""
    bound = _bind(declared, given)
    batch = {str(dims[0]) for dims in declared.values()
             if dims and list(dims) != UNKNOWN_RANK and not isinstance(dims[0], int)}
    shapes: Dict[str, InputShape] = {}
    assumed: List[AssumedDim] = []
    defaulted = set()  # dim_params that took a default: each of their dimensions is an assumed one
    for name, dims in declared.items():
        if name in given:
            shapes[name] = given[name]
            continue
        if list(dims) == UNKNOWN_RANK:
            raise CheckError(f"input {name!r} declares no shape: give it with --shape {name}:1x3x224x224 "
                             "(or its data with --inputs)")
        lo, mid, hi = [], [], []
        for axis, d in enumerate(dims):
            if isinstance(d, int):
                triple = (d, d, d)
            elif _named(d) and d in bound:
                triple = bound[d]
            else:
                value = DEFAULT_BATCH if axis == 0 or d in batch else DEFAULT_DIM
                triple = (value, value, value)
                if _named(d):
                    bound[d] = triple
                    defaulted.add(d)
            if not isinstance(d, int) and (d in defaulted or not _named(d)):
                assumed.append(AssumedDim(name, axis, str(d), triple[1]))
            lo.append(triple[0])
            mid.append(triple[1])
            hi.append(triple[2])
        shapes[name] = InputShape(tuple(lo), tuple(mid), tuple(hi))
    return shapes, assumed


def _bind(declared: Mapping[str, Sequence[Dim]], given: Mapping[str, InputShape]) -> Dict[str, Tuple[int, int, int]]:
    """dim_param -> (min, opt, max) from the given shapes, after checking each fits its declared dims."""
    bound: Dict[str, Tuple[int, int, int]] = {}
    where: Dict[str, str] = {}
    for name, shape in given.items():
        dims = list(declared.get(name, UNKNOWN_RANK))
        check_fits(name, dims, shape)
        if dims == UNKNOWN_RANK:
            continue
        for d, lo, mid, hi in zip(dims, shape.min, shape.opt, shape.max):
            if isinstance(d, int) or not _named(d):
                continue
            if d in bound and bound[d] != (lo, mid, hi):
                raise CheckError(f"--shape {where[d]} and --shape {name} give dimension {d} different sizes "
                                 f"({_triple(bound[d])} and {_triple((lo, mid, hi))})")
            bound[d], where[d] = (lo, mid, hi), name
    return bound


def check_fits(name: str, dims: Sequence[Dim], shape: InputShape) -> None:
    """CheckError unless the shape has the declared rank and every static dimension's size."""
    if list(dims) != UNKNOWN_RANK and not _fits(dims, shape):
        raise CheckError(f"--shape {name}:{shape.text()} does not fit the declared shape {show_dims(dims)}")


def fit(declared: Mapping[str, Sequence[Dim]], given: Mapping[str, InputShape]
        ) -> Tuple[Dict[str, InputShape], List[NotApplied]]:
    """One `--shape` per input for one of several models: each shape limited to the dimensions this model leaves open,
    and what was not applied. An input the model declares static keeps its shape whatever was given; a shape of
    another rank than an input with an open dimension is a CheckError (a usage error: it fits no model that takes it).
    Inputs the model does not declare are left out."""
    fitted: Dict[str, InputShape] = {}
    kept: List[NotApplied] = []
    for name, shape in given.items():
        if name not in declared:
            continue
        dims = list(declared[name])
        if dims == UNKNOWN_RANK:
            fitted[name] = shape
            continue
        if all(isinstance(d, int) for d in dims):  # static: its own shape stands
            if not _fits(dims, shape):
                kept.append(NotApplied(name, shape.text(), tuple(dims), tuple(range(len(dims)))))
            continue
        if len(shape.opt) != len(dims):
            raise CheckError(f"--shape {name}:{shape.text()} has {len(shape.opt)} dimensions; input {name} is "
                             f"{show_dims(dims)}, {len(dims)} dimensions with open ones that need a shape")
        axes = tuple(i for i, d in enumerate(dims)
                     if isinstance(d, int) and not shape.min[i] == shape.opt[i] == shape.max[i] == d)
        if axes:
            own = [tuple(dims[i] if i in axes else v for i, v in enumerate(values))
                   for values in (shape.min, shape.opt, shape.max)]
            shape = InputShape(*own)  # type: ignore[arg-type]
            kept.append(NotApplied(name, given[name].text(), tuple(dims), axes))
        fitted[name] = shape
    return fitted, kept


def _fits(dims: Sequence[Dim], shape: InputShape) -> bool:
    return len(shape.opt) == len(dims) and all(
        not isinstance(d, int) or lo == mid == hi == d for d, lo, mid, hi in zip(dims, shape.min, shape.opt, shape.max))


def profile(declared: Mapping[str, Sequence[Dim]], shapes: Mapping[str, InputShape]) -> Dict[str, Dict[str, List[int]]]:
    """The optimization profile: min, opt and max of every input with a dynamic (or undeclared) dimension."""
    return {name: shapes[name].to_json() for name, dims in declared.items()
            if name in shapes and any(not isinstance(d, int) for d in dims)}


def show_dims(dims: Sequence[Dim]) -> str:
    return "[" + ", ".join(map(str, dims)) + "]"


def _named(dim: Dim) -> bool:
    """A dim_param the model names (dimensions it leaves unnamed are labelled "dim<axis>" and stay independent)."""
    return isinstance(dim, str) and not (dim.startswith("dim") and dim[3:].isdigit())


def _triple(values: Tuple[int, int, int]) -> str:
    return str(values[1]) if values[0] == values[1] == values[2] else ",".join(map(str, values))


def describe(shapes: Mapping[str, InputShape], assumed: Sequence[AssumedDim],
             prof: Optional[Mapping[str, object]] = None) -> List[str]:
    """Lines for check's output: the profile of each dynamic input and every assumed dimension."""
    lines = [f"shape {name}: {shapes[name].text()}" + (" (min,opt,max)" if shapes[name].is_range else "")
             for name in (prof or {})]
    if assumed:
        sizes: Dict[Tuple[str, int], List[str]] = {}  # per dimension name: every input dimension it sized
        for a in assumed:
            sizes.setdefault((a.dim, a.value), []).append(f"{a.input}[{a.axis}]")
        lines.append("assumed, no --shape: " + "; ".join(f"{dim} = {value} ({', '.join(where)})"
                                                        for (dim, value), where in sizes.items())
                     + f" (defaults: batch {DEFAULT_BATCH}, any other dynamic dimension {DEFAULT_DIM})")
    return lines

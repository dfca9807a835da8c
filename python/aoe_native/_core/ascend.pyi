"""Type stubs of _core.ascend: the Ascend cost model (register_ascend.cpp).

Platform's properties mirror platform_fields() (tests/test_core_tables.py checks it)."""

from typing import Any, Mapping, Sequence, TypedDict

import numpy as np
import numpy.typing as npt

from .space import Objective, SearchSpace

class OpTableEntry(TypedDict):
    name: str
    aliases: list[str]
    family: str  # "matmul", "conv", "elementwise", "rows", "transpose", "pool", "movement", "attention", "optimizer",
    #              "routing", "grouped_matmul", "norm", "quant", "llm_elementwise"
    operands: int | None  # elementwise: 1 or 2; None: n-ary (FusedElementwise) or not elementwise
    attrs: list[str] | None  # accepted attribute names; None: any

class PlatformFieldInfo(TypedDict):
    name: str
    kind: str  # "int", "float", "bool", "string", "string_list"
    required: bool
    default: Any  # None when required
    doc: str

class Platform:
    name: str
    mode: str
    cube_cores: int
    vector_cores: int
    freq_mhz: float
    vec_freq_mhz: float
    standalone_vector_cores: int
    standalone_ddr_rate: float
    l0a: float
    l0b: float
    l0c: float
    l1: float
    ub: float
    l2: float
    bt: float
    hbm_bytes: float
    ddr_rate: float
    l2_rate: float
    l2_write_rate: float
    l1_to_l0a: float
    l1_to_l0b: float
    l0c_to_ub: float
    ub_to_ddr: float
    hbm_gbps: float
    l2_gbps: float
    gm_align: float
    fixpipe: bool
    cube_dtypes: list[str]
    vector_dtypes: list[str]
    launch_overhead_us: float
    mte2_eff: float
    gm_sector: int
    mte2_copy_cycles: float
    mte2_miss_cycles: float
    scalar_start_cycles: float
    scalar_block_cycles: float
    same_address: float
    vec_rate_share: float
    l2_absorb: float
    vec_launch_cycles: float
    vec_cost_scale: float
    vec_row_cycles: float
    vec_reread_l2: float
    vec_op_costs: list[str]
    @staticmethod
    def from_dict(d: dict[str, Any], where: str = "platform") -> Platform: ...
    def to_dict(self) -> dict[str, Any]: ...
    def __eq__(self, other: object) -> bool: ...

class CostObjective(Objective): ...

class OpModel:
    @property
    def kind(self) -> str: ...
    @property
    def param_names(self) -> list[str]: ...
    @property
    def param_values(self) -> list[list[int]]: ...
    @property
    def restrictions(self) -> list[str]: ...
    @property
    def pruning(self) -> list[str]: ...
    @property
    def baseline(self) -> list[int]: ...
    @property
    def baseline_kind(self) -> str: ...
    @property
    def api_baseline(self) -> list[int]: ...
    @property
    def added_defaults(self) -> dict[str, int]: ...
    @property
    def roofline_us(self) -> float: ...
    def space(self) -> SearchSpace: ...
    def violation(self, tiling: Sequence[int], how: str = "fast") -> str: ...
    def violations(self, tilings: npt.ArrayLike, how: str = "fast") -> list[str]: ...
    def estimate(self, tiling: Sequence[int]) -> dict[str, Any]: ...
    def estimate_batch(self, tilings: npt.ArrayLike, check: bool = True,
                       how: str = "fast") -> npt.NDArray[np.float64]: ...
    def objective(self, check_tilings: bool = True) -> CostObjective: ...

def op_model(
    platform: Platform,
    kind: str,
    inputs: Sequence[Sequence[int]],
    dtype: str,
    int_attrs: Mapping[str, Sequence[int]],
    str_attrs: Mapping[str, Sequence[str]],
    float_attrs: Mapping[str, float] = ...,
) -> OpModel: ...
def conv_auto_pads(mode: str, x: Sequence[int], w: Sequence[int], strides: Sequence[int],
                   dilations: Sequence[int]) -> list[int]: ...
def matmul_v3_default_tiling(m: int, k: int, n: int, trans_a: bool = False, trans_b: bool = False,
                             bias: bool = False, dtype: str = "float16", b_nz: bool = False, aic: int = 24,
                             l1: int = 524288, l0a: int = 65536, l0b: int = 65536, l0c: int = 131072,
                             ub: int = 196608, l2: int = 201326592, bt: int = 1024) -> dict[str, Any]: ...
def supported_ops() -> list[str]: ...
def op_table() -> list[OpTableEntry]: ...
def platform_fields() -> list[PlatformFieldInfo]: ...
def builtin_soc_versions() -> list[str]: ...
def builtin_platform(name: str) -> Platform: ...

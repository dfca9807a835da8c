"""Type stubs of the native extension aoe_native._core (cpp/bindings/module.cpp)."""

from . import ascend as ascend
from . import space as space

__version__: str

# TEMPORARY: old flat names until the Python package moves to the submodules
SearchSpace = space.SearchSpace
Objective = space.Objective
SyntheticObjective = space.SyntheticObjective
TableObjective = space.TableObjective
strategy_names = space.strategy_names
strategy_defaults = space.strategy_defaults
_tune = space.tune
AscendPlatform = ascend.Platform
AscendCostObjective = ascend.CostObjective
AscendOpModel = ascend.OpModel
ascend_op_model = ascend.op_model
ascend_supported_ops = ascend.supported_ops

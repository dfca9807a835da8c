"""Type stubs of the native extension aoe_native._core (cpp/bindings/module.cpp)."""

from . import ascend as ascend
from . import space as space

__version__: str

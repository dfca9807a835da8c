"""The PyTorch front-end: export a ``torch.nn.Module`` to ONNX in memory.

torch is optional (the ``torch`` extra); this module imports it only when called, so the
package imports without it.
"""
from __future__ import annotations

import io
import re
import warnings
from typing import Any

import onnx

__all__ = ["export_module", "require_torch", "TORCH_EXTRA"]

TORCH_EXTRA = "pip install 'aoe-native[torch]'  (torch==2.13.0 and onnxscript)"
_EXPORTERS = ("dynamo", "torchscript")


def require_torch(what: str) -> Any:
    """``import torch``, or an ImportError saying that `what` needs it and which extra to install."""
    try:
        import torch
    except ImportError as e:
        raise ImportError(f"{what} needs PyTorch, which is not installed ({e}); install the torch extra: "
                          f"{TORCH_EXTRA}") from None
    return torch


def _plain(text: str) -> str:
    """Without terminal colour codes (torch.export colours its errors)."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


class _TraceUnsafe(Exception):
    """A trace that depends on the example inputs' values (its own message, not 'export failed')."""


def export_module(module: Any, example_inputs: Any, exporter: str = "dynamo",
                  input_names: list[str] | None = None, opset: int | None = None) -> onnx.ModelProto:
    """Export `module` called on `example_inputs` (a tensor or a tuple of them) to an ONNX
    ModelProto with static input shapes, in memory.

    exporter: "dynamo" (torch.export, needs onnxscript) or "torchscript" (the tracing exporter).
    Raises ImportError naming the extra when torch (or onnxscript) is missing, ValueError when
    the export fails (with the exporter's message)."""
    if exporter not in _EXPORTERS:
        raise ValueError(f"exporter must be one of {', '.join(_EXPORTERS)}, got {exporter!r}")
    torch = require_torch("tune_torch")
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"tune_torch expects a torch.nn.Module, got {type(module).__name__}")
    args = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    name = type(module).__name__
    was_training = module.training
    module.eval()
    try:  # the example inputs must run eagerly: exporters can trace what eager mode refuses
        with torch.no_grad():
            module(*args)
    except Exception as e:
        module.train(was_training)
        raise ValueError(f"{name}: the module fails on the example inputs ({type(e).__name__}: "
                         f"{_plain(str(e)).strip().splitlines()[0] if str(e).strip() else ''})") from None
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            if exporter == "dynamo":
                try:
                    import onnxscript  # noqa: F401  (the dynamo exporter's dependency)
                except ImportError as e:
                    raise ImportError(f"the dynamo exporter needs onnxscript ({e}); install the torch extra: "
                                      f"{TORCH_EXTRA}, or pass exporter='torchscript'") from None
                program = torch.onnx.export(module, args, dynamo=True, input_names=input_names, opset_version=opset,
                                            verbose=False)
                model = program.model_proto
            else:
                buf = io.BytesIO()
                # Tracing records one branch of data-dependent control flow and only warns
                # (TracerWarning): that is an error here, as control flow is for dynamo.
                with warnings.catch_warnings(record=True) as traced:
                    warnings.simplefilter("always", torch.jit.TracerWarning)
                    torch.onnx.export(module, args, buf, dynamo=False, input_names=input_names,
                                      opset_version=opset or 17)
                unsafe = [w for w in traced if issubclass(w.category, torch.jit.TracerWarning)]
                if unsafe:
                    raise _TraceUnsafe(f"tracing depends on values of the example inputs ({unsafe[0].message}); "
                                       "the export would hold one branch only: use exporter='dynamo'")
                model = onnx.load_from_string(buf.getvalue())
    except ImportError:
        raise
    except _TraceUnsafe as e:
        raise ValueError(f"{name}: {e}") from None
    except Exception as e:
        raise ValueError(f"{name}: the {exporter} ONNX export failed ({type(e).__name__}: {_plain(str(e))})") from None
    finally:
        module.train(was_training)
    model.graph.name = name
    return model

"""Small ONNX models for the OPAT tests (kept tiny so the suite stays fast)."""
import os
import subprocess
import sys

from onnx import TensorProto, helper


def mlp(hidden=256, tokens=64, layers=2):
    """MatMul+bias+Relu layers, a LayerNorm and a Softmax: a handful of distinct tasks."""
    g_in = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", tokens, hidden])]
    nodes, last = [], "x"
    for i in range(layers):
        w = f"w{i}"
        b = f"b{i}"
        g_in += [helper.make_tensor_value_info(w, TensorProto.FLOAT, [hidden, hidden]),
                 helper.make_tensor_value_info(b, TensorProto.FLOAT, [hidden])]
        nodes += [helper.make_node("MatMul", [last, w], [f"mm{i}"], name=f"fc{i}"),
                  helper.make_node("Add", [f"mm{i}", b], [f"add{i}"], name=f"fc{i}.bias"),
                  helper.make_node("Relu", [f"add{i}"], [f"relu{i}"], name=f"fc{i}.relu")]
        last = f"relu{i}"
    g_in += [helper.make_tensor_value_info("g", TensorProto.FLOAT, [hidden]),
             helper.make_tensor_value_info("beta", TensorProto.FLOAT, [hidden])]
    nodes += [helper.make_node("LayerNormalization", [last, "g", "beta"], ["ln"], name="ln", axis=-1),
              helper.make_node("Softmax", ["ln"], ["y"], name="softmax", axis=-1),
              helper.make_node("MaxPool", ["y"], ["z"], name="pool", kernel_shape=[2])]  # unsupported
    out = helper.make_tensor_value_info("z", TensorProto.FLOAT, None)
    return helper.make_model(helper.make_graph(nodes, "mlp", g_in, [out]),
                             opset_imports=[helper.make_opsetid("", 17)])


def run_aoe(args, cwd, env_extra=None, **kw):
    """Run the `aoe` command in a subprocess (as a user would)."""
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "aoe_native.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, **kw)


def drive_progress_bar(width, event):
    """What the aoe progress bar prints in a terminal `width` columns wide for one tuning
    event and the end of the run (every task done)."""
    from rich.console import Console
    from aoe_native.outputs.console import ProgressBar
    console = Console(width=width, record=True, force_terminal=True)
    bar = ProgressBar(console)
    bar(event)
    bar({**event, "stage": "done", "tasks_done": event["tasks_total"]})
    return console.export_text()

"""Writes the built-in SoC table (python/aoe_native/data/socs.json) as C++ source, so the
core library knows the SoCs without reading files: `python embed_socs.py socs.json out.cpp`.

Only the values go in (numbers, booleans, strings, string lists); the entries' sources and
notes stay in the JSON file. The C++ side checks every entry with the same field table
(platform_from_fields) that checks it for Python."""
import json
import sys


def literal(value):
    if value is None:
        return "FieldInput{}"
    if isinstance(value, bool):
        return "FieldInput{FieldValue{%s}, false, {}}" % ("true" if value else "false")
    if isinstance(value, int):
        return "FieldInput{FieldValue{int64_t{%d}}, false, {}}" % value
    if isinstance(value, float):
        return "FieldInput{FieldValue{%r}, false, {}}" % value
    if isinstance(value, str):
        return "FieldInput{FieldValue{std::string(%s)}, false, {}}" % json.dumps(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "FieldInput{FieldValue{std::vector<std::string>{%s}}, false, {}}" % ", ".join(map(json.dumps, value))
    return None  # descriptive (sources, notes): not a field


def main(src: str, out: str) -> None:
    with open(src, encoding="utf-8") as f:
        socs = json.load(f)["socs"]
    lines = ["// Generated from socs.json by cpp/cmake/embed_socs.py at build time: do not edit.",
             '#include "socs_table.hpp"', "", "namespace aoe::ascend::detail {", "",
             "const std::vector<std::pair<std::string, std::map<std::string, FieldInput>>>& builtin_soc_table() {",
             "  static const std::vector<std::pair<std::string, std::map<std::string, FieldInput>>> table = {"]
    for name, entry in socs.items():
        fields = [(k, literal(v)) for k, v in entry.items()]
        body = ",\n       ".join("{%s, %s}" % (json.dumps(k), lit) for k, lit in fields if lit is not None)
        lines.append("      {%s,\n      {%s}}," % (json.dumps(name), body))
    lines += ["  };", "  return table;", "}", "", "}  // namespace aoe::ascend::detail", ""]
    text = "\n".join(lines)
    try:
        with open(out, encoding="utf-8") as f:
            if f.read() == text:
                return  # unchanged: no rebuild
    except OSError:
        pass
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

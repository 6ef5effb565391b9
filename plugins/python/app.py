"""py_files: an example toolhost plugin written in Python (componentize-py).

Built by `cargo xtask plugins` into target/plugins/py_files.wasm. Tools:

- ``py_read_file``: reads a text file inside the directory the policy (py_files.toml)
  grants. The host preopens only that directory, so any other path fails.
- ``py_word_count``: counts lines, words and characters of a text (no capability).
- ``py_add``: adds two numbers (no capability; used for latency benchmarks).
"""

import json

import wit_world
from componentize_py_types import Err
from wit_world.imports import host, types

MAX_BYTES = 64 * 1024


def _schema(properties, required):
    return json.dumps(
        {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }
    )


TOOLS = [
    types.ToolInfo(
        name="py_read_file",
        description="Reads a UTF-8 text file from the plugin's granted directory (first 64 KiB).",
        parameters=_schema(
            {"path": {"type": "string", "description": "path of the file, e.g. /data/notes.txt"}},
            ["path"],
        ),
        permissions=[types.Permission_Read()],
        tags=["example", "python", "files"],
    ),
    types.ToolInfo(
        name="py_word_count",
        description="Counts the lines, words and characters of a text.",
        parameters=_schema({"text": {"type": "string"}}, ["text"]),
        permissions=[],
        tags=["example", "python", "text"],
    ),
    types.ToolInfo(
        name="py_add",
        description="Adds two numbers x and y and returns the sum.",
        parameters=_schema({"x": {"type": "number"}, "y": {"type": "number"}}, ["x", "y"]),
        permissions=[],
        tags=["example", "python", "math"],
    ),
]


def _out(value, render=None):
    return types.ToolOutput(canonical=json.dumps(value), render=render)


def _read_file(args):
    path = args.get("path")
    if not isinstance(path, str) or not path:
        raise Err(types.ToolError_InvalidArguments("`path` must be a non-empty string"))
    host.log(types.LogLevel.INFO, f"reading {path}")
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except (PermissionError, FileNotFoundError, OSError) as e:
        # Outside the preopened directory WASI has no way to reach the file at all.
        raise Err(types.ToolError_Denied(f"cannot read {path}: {e}"))
    truncated = len(data) > MAX_BYTES
    text = data[:MAX_BYTES].decode("utf-8", errors="replace")
    return _out({"path": path, "bytes": len(data[:MAX_BYTES]), "truncated": truncated, "text": text}, text)


def _word_count(args):
    text = args.get("text")
    if not isinstance(text, str):
        raise Err(types.ToolError_InvalidArguments("`text` must be a string"))
    counts = {"lines": len(text.splitlines()), "words": len(text.split()), "chars": len(text)}
    return _out(counts, f"{counts['lines']} lines, {counts['words']} words, {counts['chars']} chars")


def _add(args):
    a, b = args.get("x"), args.get("y")
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b)):
        raise Err(types.ToolError_InvalidArguments("`x` and `y` must be numbers"))
    return _out({"sum": a + b}, str(a + b))


HANDLERS = {"py_read_file": _read_file, "py_word_count": _word_count, "py_add": _add}


class WitWorld(wit_world.WitWorld):
    def describe(self):
        return TOOLS

    def call(self, name, arguments, ctx):
        handler = HANDLERS.get(name)
        if handler is None:
            raise Err(types.ToolError_InvalidArguments(f"unknown tool {name}"))
        try:
            args = json.loads(arguments)
        except ValueError as e:
            raise Err(types.ToolError_InvalidArguments(f"arguments are not JSON: {e}"))
        if not isinstance(args, dict):
            raise Err(types.ToolError_InvalidArguments("arguments must be a JSON object"))
        return handler(args)

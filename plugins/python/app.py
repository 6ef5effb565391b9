"""py_files: an example toolhost plugin written in Python (componentize-py).

Built by `cargo xtask plugins` into target/plugins/py_files.wasm. Each tool is a function
marked ``@tool`` (see toolhost.py): its docstring is the description, its type hints the
argument schema. Tools:

- ``py_read_file``: reads a text file inside the directory the policy (py_files.toml)
  grants. The host preopens only that directory, so any other path fails.
- ``py_word_count``: counts lines, words and characters of a text (no capability).
- ``py_add``: adds two numbers (no capability; used for latency benchmarks).
"""

from toolhost import Denied, Invalid, export, output, tool
from wit_world.imports import host, types

MAX_BYTES = 64 * 1024


@tool(permissions=["read"], tags=["example", "python", "files"])
def py_read_file(path: str):
    """Reads a UTF-8 text file from the plugin's granted directory (first 64 KiB).

    Args:
        path: path of the file, e.g. /data/notes.txt
    """
    if not path:
        raise Invalid("`path` must be a non-empty string")
    host.log(types.LogLevel.INFO, f"reading {path}")
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        # Outside the preopened directory WASI has no way to reach the file at all.
        raise Denied(f"cannot read {path}: {e}")
    truncated = len(data) > MAX_BYTES
    text = data[:MAX_BYTES].decode("utf-8", errors="replace")
    return output({"path": path, "bytes": len(data[:MAX_BYTES]), "truncated": truncated, "text": text}, text)


@tool(tags=["example", "python", "text"])
def py_word_count(text: str):
    """Counts the lines, words and characters of a text."""
    counts = {"lines": len(text.splitlines()), "words": len(text.split()), "chars": len(text)}
    return output(counts, f"{counts['lines']} lines, {counts['words']} words, {counts['chars']} chars")


@tool(tags=["example", "python", "math"])
def py_add(x: float, y: float):
    """Adds two numbers x and y and returns the sum."""
    return output({"sum": x + y}, str(x + y))


WitWorld = export(py_read_file, py_word_count, py_add)

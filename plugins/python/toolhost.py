"""toolhost.py: the toolhost helper for plugins written in Python (componentize-py).

A plugin is a set of functions marked ``@tool``; ``export`` makes the component's
``WitWorld`` class from them::

    from toolhost import Denied, Invalid, export, output, tool

    @tool(permissions=["read"], tags=["example"])
    def line_count(path: str, limit: int = 1000) -> dict:
        \"\"\"Counts the lines of a text file.

        Args:
            path: Absolute path of the file.
            limit: Stop counting after this many lines.
        \"\"\"
        ...
        return output({"lines": n}, f"{n} lines")

    WitWorld = export(line_count)

The tool's name is the function's (``@tool(name=...)`` overrides it), its description the
docstring up to ``Args:``, each parameter's description its line under ``Args:`` (or
``Annotated[str, "description"]``), and the JSON Schema of the arguments comes from the
type hints: ``str``, ``int``, ``float``, ``bool``, ``list[T]``, ``dict``, ``Optional[T]``
(or ``T | None``) and ``Literal[...]``. A parameter with a default or an ``Optional`` type
is not required. A function returns any JSON value, or ``output(value, render)`` with the
text the model reads; it fails by raising ``Invalid(message)`` (the model should fix its
arguments), ``Denied(message)`` or ``Failed(message)``; any other exception becomes
``execution-failed`` with its message. The host validates the arguments against the schema
before the call; the helper checks again that they are an object holding every required
parameter and no other, and that each has its declared JSON type.
"""

import inspect
import json
import re
import types as pytypes
import typing

import wit_world
from componentize_py_types import Err
from wit_world.imports import types

__all__ = ["tool", "export", "output", "Invalid", "Denied", "Failed"]

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_PERMISSIONS = {
    "read": types.Permission_Read,
    "write": types.Permission_Write,
    "delete": types.Permission_Delete,
    "network": types.Permission_Network,
    "shell": types.Permission_Shell,
    "file-system": types.Permission_FileSystem,
}


class Invalid(Exception):
    """The arguments are wrong: the model should fix them."""


class Denied(Exception):
    """The tool refuses (a path outside what it may touch, ...)."""


class Failed(Exception):
    """The tool ran and failed."""


class _Output:
    def __init__(self, value, render):
        self.value = value
        self.render = render


def output(value, render=None):
    """A result with the text the model reads besides the structured value."""
    return _Output(value, None if render is None else str(render))


def _schema_of(hint):
    """(JSON Schema, optional) of a type hint."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        return _schema_of(args[0])
    if origin in (typing.Union, pytypes.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(rest) < len(args):
            return _schema_of(rest[0])[0], True
        raise TypeError(f"unsupported union {hint!r}: use Optional[T]")
    if origin is typing.Literal:
        return {"enum": list(args)}, False
    if hint is str:
        return {"type": "string"}, False
    if hint is bool:
        return {"type": "boolean"}, False
    if hint is int:
        return {"type": "integer"}, False
    if hint is float:
        return {"type": "number"}, False
    if hint is list or origin is list:
        schema = {"type": "array"}
        if args:
            schema["items"] = _schema_of(args[0])[0]
        return schema, False
    if hint is dict or origin is dict:
        return {"type": "object"}, False
    raise TypeError(f"unsupported parameter type {hint!r}: use str, int, float, bool, list, dict, Optional or Literal")


def _split_doc(doc):
    """(description, {parameter: description}) of a docstring with an ``Args:`` section."""
    doc = inspect.cleandoc(doc or "")
    head, _, tail = doc.partition("\nArgs:")
    params = {}
    current = None
    for line in tail.splitlines():
        m = re.match(r"^\s{2,}(\w+)(?:\s*\([^)]*\))?:\s*(.*)$", line)
        if m:
            current = m.group(1)
            params[current] = m.group(2).strip()
        elif current and line.strip():
            params[current] = (params[current] + " " + line.strip()).strip()
        elif not line.strip():
            current = None
    return head.strip(), params


_JSON_TYPES = {
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


class _Tool:
    def __init__(self, fn, name, description, permissions, tags):
        self.fn = fn
        doc_description, doc_params = _split_doc(fn.__doc__)
        self.name = name or fn.__name__
        if not _NAME.match(self.name):
            raise ValueError(f"tool name {self.name!r} is invalid: use 1 to 64 letters, digits, _ or -")
        self.description = (description or doc_description).strip()
        if len(self.description) < 10:
            raise ValueError(f"tool {self.name}: write a docstring of at least 10 characters saying what it does")
        hints = typing.get_type_hints(fn, include_extras=True)
        properties = {}
        required = []
        self.types = {}
        for p in inspect.signature(fn).parameters.values():
            if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                raise TypeError(f"tool {self.name}: parameter {p.name} must be a plain named parameter")
            if p.name not in hints:
                raise TypeError(f"tool {self.name}: parameter {p.name} needs a type hint (its JSON Schema)")
            schema, optional = _schema_of(hints[p.name])
            self.types[p.name] = (schema.get("type"), optional)
            described = doc_params.get(p.name)
            meta = getattr(hints[p.name], "__metadata__", ())
            if meta and isinstance(meta[0], str):
                described = meta[0]
            if described:
                schema["description"] = described
            properties[p.name] = schema
            if not optional and p.default is p.empty:
                required.append(p.name)
        self.required = required
        self.parameters = json.dumps(
            {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
        )
        perms = []
        for p in permissions:
            if p in _PERMISSIONS:
                perms.append(_PERMISSIONS[p]())
            elif isinstance(p, str) and p.startswith("custom:") and len(p) > 7:
                perms.append(types.Permission_Custom(p[7:]))
            else:
                raise ValueError(f"unknown permission {p!r}: use {', '.join(_PERMISSIONS)} or 'custom:NAME'")
        self.info = types.ToolInfo(
            name=self.name,
            description=self.description,
            parameters=self.parameters,
            permissions=perms,
            tags=[str(t) for t in tags],
        )

    def check(self, args):
        if not isinstance(args, dict):
            raise Invalid("arguments must be a JSON object")
        missing = [k for k in self.required if k not in args]
        if missing:
            raise Invalid(f"missing required argument(s): {', '.join(missing)}")
        unknown = [k for k in args if k not in self.types]
        if unknown:
            raise Invalid(f"unknown argument(s): {', '.join(unknown)}")
        for k, v in args.items():
            kind, optional = self.types[k]
            if v is None and optional:
                continue
            if kind is not None and not _JSON_TYPES[kind](v):
                raise Invalid(f"`{k}` must be of JSON type {kind}")


def tool(fn=None, *, name=None, description=None, permissions=(), tags=()):
    """Marks a function as a tool: ``@tool`` or ``@tool(name=..., permissions=[...], tags=[...])``."""

    def wrap(f):
        f.__toolhost_tool__ = _Tool(f, name, description, permissions, tags)
        return f

    return wrap(fn) if fn is not None else wrap


def _error(e):
    if isinstance(e, Invalid):
        return types.ToolError_InvalidArguments(str(e))
    if isinstance(e, Denied):
        return types.ToolError_Denied(str(e))
    return types.ToolError_ExecutionFailed(str(e) or type(e).__name__)


def export(*functions):
    """The component's ``WitWorld`` class for the functions marked ``@tool``."""
    tools = {}
    for f in functions:
        t = getattr(f, "__toolhost_tool__", None)
        if t is None:
            raise TypeError(f"{f!r} is not marked @tool")
        if t.name in tools:
            raise ValueError(f"two tools are named {t.name}")
        tools[t.name] = t
    infos = [t.info for t in tools.values()]

    class WitWorld(wit_world.WitWorld):
        def describe(self):
            return infos

        def call(self, name, arguments, ctx):
            t = tools.get(name)
            if t is None:
                raise Err(types.ToolError_InvalidArguments(f"no tool named {name!r} in this plugin"))
            try:
                args = json.loads(arguments)
                t.check(args)
                result = t.fn(**args)
            except Err:
                raise
            except ValueError as e:
                # json.JSONDecodeError is a ValueError; so are the tool's own bad values.
                if isinstance(e, json.JSONDecodeError):
                    raise Err(types.ToolError_InvalidArguments(f"arguments are not JSON: {e}"))
                raise Err(_error(e))
            except Exception as e:  # noqa: BLE001 - every failure becomes a tool error
                raise Err(_error(e))
            if isinstance(result, _Output):
                return types.ToolOutput(canonical=json.dumps(result.value), render=result.render)
            return types.ToolOutput(canonical=json.dumps(result), render=None)

    return WitWorld

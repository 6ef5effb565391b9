"""{{name}}: a toolhost plugin written in Python.

Each tool is a function marked ``@tool`` (toolhost.py explains the rest): its docstring
is the description the model reads (parameters described under ``Args:``), its type
hints the JSON Schema of the arguments. Return any JSON value, or ``output(value,
render)`` with the text the model reads; raise ``Invalid``, ``Denied`` or ``Failed`` to
fail. Declare what a tool needs with ``@tool(permissions=["read"])``; {{name}}.toml grants
it (files are readable only inside the folders it grants under ``read``).
"""

from toolhost import Invalid, export, output, tool
from wit_world.imports import host, types


@tool(name="{{tool}}", tags=["example"])
def greet(name: str):
    """Greets someone by name.

    Args:
        name: Who to greet.
    """
    if not name:
        raise Invalid("`name` must not be empty")
    host.log(types.LogLevel.INFO, f"greeting {name}")
    greeting = f"Hello, {name}!"
    return output({"greeting": greeting}, greeting)


WitWorld = export(greet)

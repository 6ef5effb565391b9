"""{{name}}: a toolhost plugin written in Python.

The class ``WitWorld`` implements the component's exports: ``describe()`` lists the tools
and ``call(name, arguments, ctx)`` runs one. Return ``types.ToolOutput``; raise
``Err(types.ToolError_InvalidArguments(...))`` (or ``ToolError_ExecutionFailed`` /
``ToolError_Denied``) to fail. Files are readable only inside the folders {{name}}.toml
grants under ``read``.
"""

import json

import wit_world
from componentize_py_types import Err
from wit_world.imports import host, types


class WitWorld(wit_world.WitWorld):
    def describe(self):
        return [
            types.ToolInfo(
                name="{{tool}}",
                description="Greets someone by name.",
                parameters=json.dumps(
                    {
                        "type": "object",
                        "properties": {"name": {"type": "string", "description": "who to greet"}},
                        "required": ["name"],
                    }
                ),
                # Permission levels this tool needs, e.g. [types.Permission_Read()].
                permissions=[],
                tags=["example"],
            )
        ]

    def call(self, name, arguments, ctx):
        args = json.loads(arguments)
        if name != "{{tool}}":
            raise Err(types.ToolError_InvalidArguments(f"unknown tool {name}"))
        who = args.get("name")
        if not isinstance(who, str):
            raise Err(types.ToolError_InvalidArguments("`name` must be a string"))
        host.log(types.LogLevel.INFO, f"greeting {who}")
        greeting = f"Hello, {who}!"
        return types.ToolOutput(canonical=json.dumps({"greeting": greeting}), render=greeting)

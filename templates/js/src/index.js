// {{name}}: a toolhost plugin written in JavaScript.
//
// Each tool is a `tool({ name, description, parameters, run })` (./toolhost.js explains
// the rest): `parameters` is the JSON Schema of the arguments, `run` gets them parsed and
// returns any JSON value, or `output(value, render)` with the text the model reads. Throw
// `invalid(message)`, `denied(message)` or `failed(message)` to fail. Declare what a tool
// needs in `permissions` ('read', 'network', ...); {{name}}.toml grants it. `fetch()`
// works for the hosts that {{name}}.toml allows under `network`.
import { log } from 'toolhost:tool/host@0.1.0';
import { invalid, output, plugin, tool } from './toolhost.js';

const greet = tool({
  name: '{{tool}}',
  description: 'Greets someone by name.',
  parameters: {
    type: 'object',
    properties: { name: { type: 'string', description: 'Who to greet.' } },
    required: ['name'],
  },
  permissions: [],
  tags: ['example'],
  run({ name }) {
    if (typeof name !== 'string' || !name) {
      throw invalid('`name` must be a non-empty string');
    }
    log('info', `greeting ${name}`);
    const greeting = `Hello, ${name}!`;
    return output({ greeting }, greeting);
  },
});

const tools = plugin([greet]);

export function describe() {
  return tools.describe();
}

export function call(name, argumentsJson, ctx) {
  return tools.call(name, argumentsJson, ctx);
}

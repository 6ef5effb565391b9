// {{name}}: a toolhost plugin written in JavaScript.
//
// The component exports `describe()` (the tools it offers) and `call(name, argumentsJson,
// ctx)` (runs one). Return a `{ canonical, render }` object; throw
// `{ tag: 'invalid-arguments' | 'execution-failed' | 'denied', val: 'message' }` to fail.
// `fetch()` works for the hosts that {{name}}.toml allows under `network`.
import { log } from 'toolhost:tool/host@0.1.0';

export function describe() {
  return [
    {
      name: '{{tool}}',
      description: 'Greets someone by name.',
      parameters: JSON.stringify({
        type: 'object',
        properties: { name: { type: 'string', description: 'who to greet' } },
        required: ['name'],
      }),
      // Permission levels this tool needs: 'read', 'write', 'delete', 'network', 'shell',
      // 'file-system' or { tag: 'custom', val: '...' }.
      permissions: [],
      tags: ['example'],
    },
  ];
}

export function call(name, argumentsJson, _ctx) {
  const args = JSON.parse(argumentsJson);
  switch (name) {
    case '{{tool}}': {
      if (typeof args.name !== 'string') {
        throw { tag: 'invalid-arguments', val: '`name` must be a string' };
      }
      log('info', `greeting ${args.name}`);
      const greeting = `Hello, ${args.name}!`;
      return { canonical: JSON.stringify({ greeting }), render: greeting };
    }
    default:
      throw { tag: 'invalid-arguments', val: `unknown tool ${name}` };
  }
}

// toolhost.js: the toolhost helper for plugins written in JavaScript (componentize-js).
//
// A plugin is a list of tools, each a plain object made with `tool()`, and one `plugin()`
// call that gives the component's two exports:
//
//   import { tool, plugin, output, invalid } from './toolhost.js';
//
//   const greet = tool({
//     name: 'greet',
//     description: 'Greets someone by name.',
//     parameters: {                       // the JSON Schema of the arguments
//       type: 'object',
//       properties: { name: { type: 'string', description: 'Who to greet.' } },
//       required: ['name'],
//     },
//     permissions: [],                    // 'read', 'write', 'delete', 'network', 'shell',
//                                         // 'file-system' or { tag: 'custom', val: '...' }
//     tags: ['example'],
//     run({ name }, ctx) {                // may be async; ctx: { sessionId, traceId, callId }
//       if (!name) throw invalid('`name` must not be empty');
//       return output({ greeting: `Hello, ${name}!` }, `Hello, ${name}!`);
//     },
//   });
//
//   const tools = plugin([greet]);
//   export function describe() { return tools.describe(); }
//   export function call(name, args, ctx) { return tools.call(name, args, ctx); }
//
// `run` returns any JSON value (the host renders it) or `output(value, render)` with the
// text the model reads. To fail, throw `invalid(message)` (the model should fix its
// arguments), `denied(message)` or `failed(message)`; any other exception becomes
// `execution-failed` with its message. The host validates the arguments against
// `parameters` before the call; the helper checks again that they are a JSON object with
// every `required` property, so a tool never runs on arguments it did not ask for.

const OUTPUT = Symbol('toolhost.output');
const PERMISSIONS = ['read', 'write', 'delete', 'network', 'shell', 'file-system'];
const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** An error the model should fix by changing its arguments. */
export function invalid(message) {
  return { tag: 'invalid-arguments', val: String(message) };
}

/** A refusal: the tool will not do this (a path outside what it may touch, ...). */
export function denied(message) {
  return { tag: 'denied', val: String(message) };
}

/** The tool ran and failed. */
export function failed(message) {
  return { tag: 'execution-failed', val: String(message) };
}

/** A result with the text the model reads besides the structured value. */
export function output(value, render) {
  return { [OUTPUT]: true, value, render: render === undefined ? undefined : String(render) };
}

function permission(p) {
  if (typeof p === 'string' && PERMISSIONS.includes(p)) return { tag: p };
  if (p && p.tag === 'custom' && typeof p.val === 'string' && p.val) return { tag: 'custom', val: p.val };
  throw new Error(`unknown permission ${JSON.stringify(p)}: use one of ${PERMISSIONS.join(', ')} or { tag: 'custom', val }`);
}

/**
 * One tool. Checks its definition when the module loads (a mistake fails the build or
 * the first `describe`, not a call).
 */
export function tool({ name, description, parameters, permissions = [], tags = [], run }) {
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new Error(`tool name ${JSON.stringify(name)} is invalid: use 1 to 64 letters, digits, _ or -`);
  }
  if (typeof description !== 'string' || description.trim().length < 10) {
    throw new Error(`tool ${name}: the description must say in at least 10 characters what it does`);
  }
  const schema = parameters === undefined ? { type: 'object', properties: {} } : parameters;
  if (!schema || schema.type !== 'object') {
    throw new Error(`tool ${name}: parameters must be an object schema ({ type: 'object', properties, required })`);
  }
  if (typeof run !== 'function') throw new Error(`tool ${name}: run must be a function`);
  return {
    info: {
      name,
      description,
      parameters: JSON.stringify(schema),
      permissions: permissions.map(permission),
      tags: tags.map(String),
    },
    required: Array.isArray(schema.required) ? schema.required : [],
    run,
  };
}

function toOutput(result) {
  if (result && result[OUTPUT]) {
    return { canonical: JSON.stringify(result.value ?? null), render: result.render };
  }
  return { canonical: JSON.stringify(result ?? null), render: undefined };
}

function isToolError(e) {
  return e && typeof e === 'object' && ['invalid-arguments', 'denied', 'execution-failed'].includes(e.tag);
}

/** The component's `describe` and `call` for a list of tools. */
export function plugin(tools) {
  const byName = new Map();
  for (const t of tools) {
    if (byName.has(t.info.name)) throw new Error(`two tools are named ${t.info.name}`);
    byName.set(t.info.name, t);
  }
  const infos = tools.map((t) => t.info);
  return {
    describe() {
      return infos;
    },
    async call(name, argumentsJson, ctx) {
      const t = byName.get(name);
      if (!t) throw invalid(`no tool named ${JSON.stringify(name)} in this plugin`);
      let args;
      try {
        args = JSON.parse(argumentsJson);
      } catch (e) {
        throw invalid(`arguments are not JSON: ${e.message}`);
      }
      if (!args || typeof args !== 'object' || Array.isArray(args)) {
        throw invalid('arguments must be a JSON object');
      }
      const missing = t.required.filter((k) => !(k in args));
      if (missing.length) throw invalid(`missing required argument(s): ${missing.join(', ')}`);
      try {
        return toOutput(await t.run(args, ctx));
      } catch (e) {
        if (isToolError(e)) throw { tag: e.tag, val: String(e.val) };
        throw failed(e && e.message ? e.message : e);
      }
    },
  };
}

/**
 * Node's `http` module, for the ES modules of the main thread that need its values (agents,
 * `request`, `STATUS_CODES`).
 *
 * Why not `import http from 'node:http'`: an ES module importing a built-in makes Node build that
 * module's ES facade, which reads every export once, and `http`'s lazy `WebSocket`,
 * `CloseEvent` and `MessageEvent` then load Node's bundled undici: 20–40 ms of the main thread's
 * CPU at start, on the path to the first request to the API server when it comes from the
 * kubeconfig check, for classes nothing here uses. `process.getBuiltinModule` hands over the
 * CommonJS module itself, as `require` would (the reflector's worker bundle is CommonJS for the
 * same reason). Type-only imports of `node:http` stay as they are: they are erased.
 */
export const nodeHttp = process.getBuiltinModule('node:http');

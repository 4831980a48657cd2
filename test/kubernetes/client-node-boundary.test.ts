/**
 * connection.ts is the only importer of @kubernetes/client-node, and only lazily: everything else in
 * src/kubernetes (the reflector, the worker-backed source, the HTTP adapter) loads without it.
 * Checked on the compiled build in plain Node, with an import hook that denies the package.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** A kubeconfig with one token user, as the scripts below load it (JSON text in a JS literal). */
const MINIMAL_KUBECONFIG = JSON.stringify(
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    'current-context': 'x',
    clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:6443' } }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    users: [{ name: 'u', user: { token: 't' } }],
  }),
);

function runDenied(code: string, env: Record<string, string> = {}) {
  return spawnSync(
    process.execPath,
    ['--import', './test/support/deny-client-node.mjs', '--input-type=module', '-e', code],
    { cwd: root, encoding: 'utf8', timeout: 30_000, env: { ...process.env, ...env } },
  );
}

describe('the client-node boundary', () => {
  it('loads every kubernetes module without @kubernetes/client-node', () => {
    // Every compiled module of the folder, so a new file is covered without editing this list.
    const modules = readdirSync(join(root, 'dist/src/kubernetes'), { recursive: true })
      .map(String)
      .filter((file) => file.endsWith('.js'));
    expect(modules.length).toBeGreaterThan(10);
    const imports = modules.map((m) => `await import('./dist/src/kubernetes/${m}');`).join('\n');
    const { status, stderr } = runDenied(imports);
    expect(stderr).toBe('');
    expect(status).toBe(0);
  });

  it('reports a missing client as a configuration error when connecting', () => {
    const { status, stdout } = runDenied(
      `const { connectPodApi } = await import('./dist/src/kubernetes/resources/http-pod-api.js');
       await connectPodApi().catch((e) => console.log(e.name + ': ' + e.message));`,
    );
    expect(status).toBe(0);
    expect(stdout).toContain('KubeConfigError: cannot load @kubernetes/client-node');
  });

  it('loads KubeConfig in a build from its one-file bundle, never from the package, exec plugins included', () => {
    // The package is denied; the bundle (built by `npm run build`) is allowed.
    const dir = mkdtempSync(join(tmpdir(), 'kubeconfig-'));
    const kubeconfig = join(dir, 'config');
    // An exec credential plugin: the bundle carries client-node's auth, not only its parser.
    const plugin = join(dir, 'credential-plugin.sh');
    writeFileSync(
      plugin,
      `#!/bin/sh\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-the-plugin"}}'\n`,
      { mode: 0o755 },
    );
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]',
        'contexts: [{name: x, context: {cluster: c, user: u}}]',
        'current-context: x',
        `users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: ${plugin}, interactiveMode: Never}}}]`,
      ].join('\n'),
    );
    const { status, stdout, stderr } = runDenied(
      `const { loadApiConnection, importKubeConfig } = await import('./dist/src/kubernetes/client/connection.js');
       const connection = await loadApiConnection({ kubeconfigPath: ${JSON.stringify(kubeconfig)} });
       const { origin } = await importKubeConfig();
       const { headers } = await connection.requestOptions();
       console.log(origin + ' ' + connection.server + ' ' + headers.Authorization);`,
      { ALLOW_CLIENT_NODE_BUNDLE: '1' },
    );
    expect(stderr).toBe('');
    expect(status).toBe(0);
    expect(stdout.trim()).toBe('bundle https://127.0.0.1:6443 Bearer from-the-plugin');
  });

  it('bundles KubeConfig without the generated API client, whose one user (makeApiClient) says so', () => {
    const { status, stdout, stderr } = runDenied(
      `const { KubeConfig } = await import('./dist/vendor/client-node-kubeconfig.cjs');
       const config = new KubeConfig();
       config.loadFromString(${MINIMAL_KUBECONFIG});
       console.log(config.getCurrentCluster().server);
       try { config.makeApiClient(class {}); } catch (e) { console.log(e.message); }`,
      { ALLOW_CLIENT_NODE_BUNDLE: '1' },
    );
    expect(stderr).toBe('');
    expect(status).toBe(0);
    expect(stdout.trim().split('\n')).toEqual([
      'https://127.0.0.1:6443',
      "KubeConfig.makeApiClient is not available in pool-controller's client-node bundle",
    ]);
  });

  it("runs the bundle's undici only when client-node makes a fetch dispatcher, which then works", () => {
    // The witness: undici is the bundle's one module that loads Node's web streams at its start.
    const { status, stdout, stderr } = runDenied(
      `const webStreams = () => process.moduleLoadList.includes('NativeModule stream/web');
       const { KubeConfig } = await import('./dist/vendor/client-node-kubeconfig.cjs');
       const config = new KubeConfig();
       config.loadFromString(${MINIMAL_KUBECONFIG});
       const options = {};
       await config.applyToHTTPSOptions(options);
       console.log('after HTTPS options: ' + webStreams());
       const agent = config.createDispatcher(config.getCurrentCluster(), { ca: 'pem' });
       const proxy = config.createDispatcher({ ...config.getCurrentCluster(), proxyUrl: 'http://127.0.0.1:1' }, {});
       console.log('after dispatchers: ' + webStreams() + ' ' + typeof agent.dispatch + ' ' + typeof proxy.dispatch);
       await Promise.all([agent.close(), proxy.close()]);`,
      { ALLOW_CLIENT_NODE_BUNDLE: '1' },
    );
    expect(stderr).toBe('');
    expect(status).toBe(0);
    expect(stdout.trim().split('\n')).toEqual([
      'after HTTPS options: false',
      'after dispatchers: true function function',
    ]);
  });

  it("makes a kubeconfig's proxy agents through the bundle's stand-ins for its proxy packages", () => {
    const { status, stdout, stderr } = runDenied(
      `const { KubeConfig } = await import('./dist/vendor/client-node-kubeconfig.cjs');
       const agentFor = async (proxyUrl) => {
         const config = new KubeConfig();
         config.loadFromString(JSON.stringify({
           apiVersion: 'v1', kind: 'Config', 'current-context': 'x',
           clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:6443', 'proxy-url': proxyUrl } }],
           contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
           users: [{ name: 'u', user: { token: 't' } }],
         }));
         const options = {};
         await config.applyToHTTPSOptions(options);
         // esbuild may suffix a class name it renamed (HttpsProxyAgent2)
         return options.agent.constructor.name.replace(/\\d+$/, '') + ' ' + (options.agent instanceof (await import('node:http')).Agent);
       };
       console.log(await agentFor('http://127.0.0.1:3128'));
       console.log(await agentFor('socks5://127.0.0.1:1080'));`,
      { ALLOW_CLIENT_NODE_BUNDLE: '1' },
    );
    expect(stderr).toBe('');
    expect(status).toBe(0);
    expect(stdout.trim().split('\n')).toEqual(['HttpsProxyAgent true', 'SocksProxyAgent true']);
  });
});

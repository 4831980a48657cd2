import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  envName,
  FLAG_GROUPS,
  FLAGS,
  HelpRequested,
  helpText,
  parseConfig,
  parseDuration,
  parseListen,
  VersionRequested,
  WITHHELD,
} from '../../src/cli/config.js';
import { loadAdminToken, readAdminTokenFile } from '../../src/cli/secret-file.js';
import { LWS_LABELS } from '../../src/pools/labels.js';

function errorOf(argv: string[], env: NodeJS.ProcessEnv = {}): string {
  try {
    parseConfig(argv, env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('--kube-api-content-type', () => {
  it('takes the media types kube-controller-manager takes, and the short names', () => {
    const of = (value: string) =>
      parseConfig(['--kube-api-content-type', value], {}).kubeApiContentType;
    expect(of('application/vnd.kubernetes.protobuf')).toBe('protobuf');
    expect(of('application/json')).toBe('json');
    expect(of('JSON')).toBe('json');
    expect(of('protobuf')).toBe('protobuf');
  });

  it('refuses any other encoding, naming the flag', () => {
    expect(() => parseConfig(['--kube-api-content-type', 'application/yaml'], {})).toThrow(
      /--kube-api-content-type.*expected application\/vnd\.kubernetes\.protobuf or application\/json, got "application\/yaml"/,
    );
  });
});

describe('--initial-list', () => {
  it('defaults to watch-list, as client-go since 1.35, and takes list', () => {
    expect(parseConfig([], {}).initialList).toBe('watch-list');
    expect(parseConfig(['--initial-list', 'list'], {}).initialList).toBe('list');
    expect(parseConfig([], { POOL_CONTROLLER_INITIAL_LIST: 'list' }).initialList).toBe('list');
  });

  it('refuses anything else, naming the flag and its variable', () => {
    expect(() => parseConfig(['--initial-list', 'stream'], {})).toThrow(
      /--initial-list \(POOL_CONTROLLER_INITIAL_LIST\).*expected watch-list or list, got "stream"/,
    );
  });
});

describe('parseConfig defaults', () => {
  it('follows LeaderWorkerSet and listens on 0.0.0.0:8080 with no flags at all', () => {
    const { flags, ...config } = parseConfig([], {});
    expect(flags.every((f) => f.from === 'default')).toBe(true);
    expect(config).toEqual({
      source: undefined,
      kubeconfig: undefined,
      context: undefined,
      kubeApiContentType: 'protobuf',
      kubeApiCompression: false,
      kubeApiHttp2: true,
      initialList: 'watch-list',
      namespace: undefined,
      selector: 'leaderworkerset.sigs.k8s.io/name',
      labels: LWS_LABELS,
      portName: 'http',
      listen: { host: '0.0.0.0', port: 8080 },
      healthProbeListen: undefined,
      adminTokenFile: undefined,
      adminAllowedHosts: [],
      resyncPeriodMs: 36_000_000,
      maxEventStreams: 256,
      logLevel: 'info',
      shutdownTimeoutMs: 10_000,
      shutdownGraceMs: 3_000,
      simulationStepMs: 3_000,
      logFormat: undefined,
      leaderElection: {
        enabled: undefined,
        resourceName: 'pool-controller',
        resourceNamespace: undefined,
        leaseDurationMs: 15_000,
        renewDeadlineMs: 10_000,
        retryPeriodMs: 2_000,
      },
      driftIntervalMs: 60_000,
      sglangRouters: [],
      eppEndpointsFiles: [],
      sglangBootstrapPortAnnotation: 'sglang.ai/bootstrap-port',
      sglangRouterApiKeyFile: undefined,
      publishEndpointSlices: false,
      endpointSliceServiceSuffix: '-alive',
      sinkAllowLoopback: false,
      sinkMode: 'apply',
      sinkPanicThresholdPercent: 0,
      sglangRouterOwnership: 'managed',
      cellReadinessGate: false,
      cellReadinessGateCondition: 'pool-controller/cell-alive',
      events: undefined,
    });
  });

  it('reads --sink-mode, --sink-panic-threshold and --sglang-router-ownership, naming the flag on bad values', () => {
    const config = parseConfig(
      ['--sink-mode', 'observe', '--sink-panic-threshold', '50%', '--sglang-router-ownership=all'],
      {},
    );
    expect(config).toMatchObject({
      sinkMode: 'observe',
      sinkPanicThresholdPercent: 50,
      sglangRouterOwnership: 'all',
    });
    expect(parseConfig(['--sink-panic-threshold', '12.5'], {}).sinkPanicThresholdPercent).toBe(
      12.5,
    );
    expect(() => parseConfig(['--sink-mode', 'dry'], {})).toThrow(
      /--sink-mode \(POOL_CONTROLLER_SINK_MODE\): expected apply or observe, got "dry"/,
    );
    for (const bad of ['101', '-1', 'half', '']) {
      expect(() => parseConfig([`--sink-panic-threshold=${bad}`], {})).toThrow(
        /--sink-panic-threshold \(POOL_CONTROLLER_SINK_PANIC_THRESHOLD\): expected a percentage from 0 to 100/,
      );
    }
    expect(() => parseConfig(['--sglang-router-ownership', 'mine'], {})).toThrow(
      /--sglang-router-ownership \(POOL_CONTROLLER_SGLANG_ROUTER_OWNERSHIP\): expected managed or all/,
    );
  });

  it('takes the cell readiness gate and Events flags, and refuses a kubelet condition type', () => {
    const config = parseConfig(
      [
        '--cell-readiness-gate',
        '--cell-readiness-gate-condition',
        'example.com/cell-up',
        '--events=false',
      ],
      {},
    );
    expect(config.cellReadinessGate).toBe(true);
    expect(config.cellReadinessGateCondition).toBe('example.com/cell-up');
    expect(config.events).toBe(false);
    expect(() => parseConfig(['--cell-readiness-gate-condition', 'Ready'], {})).toThrow(
      /--cell-readiness-gate-condition \(POOL_CONTROLLER_CELL_READINESS_GATE_CONDITION\).*domain-prefixed/,
    );
    expect(() => parseConfig(['--cell-readiness-gate-condition', 'a b/c'], {})).toThrow(
      /qualified name/,
    );
  });

  it('allows loopback cell addresses only when --sink-allow-loopback or its variable says so', () => {
    expect(parseConfig(['--sink-allow-loopback'], {}).sinkAllowLoopback).toBe(true);
    expect(parseConfig([], { POOL_CONTROLLER_SINK_ALLOW_LOOPBACK: 'true' }).sinkAllowLoopback).toBe(
      true,
    );
    expect(parseConfig(['--sink-allow-loopback=false'], {}).sinkAllowLoopback).toBe(false);
    expect(() => parseConfig(['--sink-allow-loopback=maybe'], {})).toThrow(
      /--sink-allow-loopback \(POOL_CONTROLLER_SINK_ALLOW_LOOPBACK\)/,
    );
  });

  it('makes the default selector follow a configured pool label', () => {
    expect(parseConfig(['--pool-label', 'example.com/pool'], {}).selector).toBe('example.com/pool');
  });
});

describe('flags and environment variables', () => {
  it('reads every flag from its POOL_CONTROLLER_ variable', () => {
    const { flags, ...config } = parseConfig([], {
      POOL_CONTROLLER_SOURCE: 'simulated',
      POOL_CONTROLLER_NAMESPACE: 'serving',
      POOL_CONTROLLER_POOL_LABEL: 'example.com/pool',
      POOL_CONTROLLER_CELL_INDEX_LABEL: 'example.com/cell',
      POOL_CONTROLLER_WORKER_INDEX_LABEL: 'example.com/worker',
      POOL_CONTROLLER_CELL_SIZE_ANNOTATION: 'example.com/size',
      POOL_CONTROLLER_PORT_NAME: 'grpc',
      POOL_CONTROLLER_LISTEN: '127.0.0.1:9000',
      POOL_CONTROLLER_RESYNC_PERIOD: '30m',
      POOL_CONTROLLER_LOG_LEVEL: 'debug',
      POOL_CONTROLLER_SELECTOR: 'app=engine',
      POOL_CONTROLLER_ADMIN_TOKEN_FILE: '/secrets/token',
      POOL_CONTROLLER_ADMIN_ALLOWED_HOSTS: 'ctl.internal',
      POOL_CONTROLLER_MAX_EVENT_STREAMS: '32',
      POOL_CONTROLLER_HEALTH_PROBE_LISTEN: '127.0.0.1:9001',
      POOL_CONTROLLER_KUBECONFIG: '/k/config',
      POOL_CONTROLLER_CONTEXT: 'kind-dev',
      POOL_CONTROLLER_KUBE_API_CONTENT_TYPE: 'application/json',
      POOL_CONTROLLER_KUBE_API_COMPRESSION: 'true',
      POOL_CONTROLLER_KUBE_API_HTTP2: 'false',
      POOL_CONTROLLER_INITIAL_LIST: 'list',
      POOL_CONTROLLER_SHUTDOWN_TIMEOUT: '5s',
      POOL_CONTROLLER_SHUTDOWN_GRACE: 'off',
      POOL_CONTROLLER_SIMULATION_STEP: '500ms',
      POOL_CONTROLLER_LOG_FORMAT: 'json',
      POOL_CONTROLLER_LEADER_ELECT: 'false',
      POOL_CONTROLLER_LEADER_ELECT_RESOURCE_NAME: 'engines-controller',
      POOL_CONTROLLER_LEADER_ELECT_RESOURCE_NAMESPACE: 'ops',
      POOL_CONTROLLER_LEADER_ELECT_LEASE_DURATION: '4s',
      POOL_CONTROLLER_LEADER_ELECT_RENEW_DEADLINE: '3s',
      POOL_CONTROLLER_LEADER_ELECT_RETRY_PERIOD: '1s',
      POOL_CONTROLLER_DRIFT_INTERVAL: 'off',
      POOL_CONTROLLER_SGLANG_ROUTER:
        'engine=http://router-a:30000/, trainer=https://router-b,role=prefill, gen=https://router-b,role=decode',
      POOL_CONTROLLER_EPP_ENDPOINTS_FILE: 'engine=/run/epp/engine.yaml',
      POOL_CONTROLLER_SGLANG_BOOTSTRAP_PORT_ANNOTATION: 'example.com/bootstrap',
      POOL_CONTROLLER_SGLANG_ROUTER_API_KEY_FILE: '/secrets/router-key',
      POOL_CONTROLLER_PUBLISH_ENDPOINTSLICES: 'true',
      POOL_CONTROLLER_ENDPOINTSLICE_SERVICE_SUFFIX: '-ready',
      POOL_CONTROLLER_SINK_ALLOW_LOOPBACK: 'true',
      POOL_CONTROLLER_SINK_MODE: 'observe',
      POOL_CONTROLLER_SINK_PANIC_THRESHOLD: '30',
      POOL_CONTROLLER_SGLANG_ROUTER_OWNERSHIP: 'all',
      POOL_CONTROLLER_CELL_READINESS_GATE: 'true',
      POOL_CONTROLLER_CELL_READINESS_GATE_CONDITION: 'example.com/cell-up',
      POOL_CONTROLLER_EVENTS: 'false',
    });
    expect(flags.filter((f) => f.from === 'environment').length).toBeGreaterThan(30);
    expect(config).toEqual({
      source: 'simulated',
      kubeconfig: '/k/config',
      context: 'kind-dev',
      kubeApiContentType: 'json',
      kubeApiCompression: true,
      kubeApiHttp2: false,
      initialList: 'list',
      namespace: 'serving',
      selector: 'app=engine',
      labels: {
        pool: 'example.com/pool',
        cellIndex: 'example.com/cell',
        workerIndex: 'example.com/worker',
        cellSize: 'example.com/size',
      },
      portName: 'grpc',
      listen: { host: '127.0.0.1', port: 9000 },
      healthProbeListen: { host: '127.0.0.1', port: 9001 },
      adminTokenFile: '/secrets/token',
      adminAllowedHosts: ['ctl.internal'],
      resyncPeriodMs: 1_800_000,
      maxEventStreams: 32,
      logLevel: 'debug',
      shutdownTimeoutMs: 5_000,
      shutdownGraceMs: 0,
      simulationStepMs: 500,
      logFormat: 'json',
      leaderElection: {
        enabled: false,
        resourceName: 'engines-controller',
        resourceNamespace: 'ops',
        leaseDurationMs: 4_000,
        renewDeadlineMs: 3_000,
        retryPeriodMs: 1_000,
      },
      driftIntervalMs: null,
      sglangRouters: [
        { pool: 'engine', url: 'http://router-a:30000' },
        { pool: 'trainer', url: 'https://router-b', role: 'prefill' },
        { pool: 'gen', url: 'https://router-b', role: 'decode' },
      ],
      eppEndpointsFiles: [{ pool: 'engine', path: '/run/epp/engine.yaml' }],
      sglangBootstrapPortAnnotation: 'example.com/bootstrap',
      sglangRouterApiKeyFile: '/secrets/router-key',
      publishEndpointSlices: true,
      endpointSliceServiceSuffix: '-ready',
      sinkAllowLoopback: true,
      sinkMode: 'observe',
      sinkPanicThresholdPercent: 30,
      sglangRouterOwnership: 'all',
      cellReadinessGate: true,
      cellReadinessGateCondition: 'example.com/cell-up',
      events: false,
    });
  });

  it('takes boolean flags bare or as =true|false, never the next argument', () => {
    expect(parseConfig(['--leader-elect'], {}).leaderElection.enabled).toBe(true);
    expect(parseConfig(['--leader-elect=false'], {}).leaderElection.enabled).toBe(false);
    expect(parseConfig(['--leader-elect=true'], {}).leaderElection.enabled).toBe(true);
    expect(parseConfig(['--publish-endpointslices'], {}).publishEndpointSlices).toBe(true);
    expect(() => parseConfig(['--leader-elect', 'false'], {})).toThrow(ConfigError);
    expect(() => parseConfig(['--leader-elect=maybe'], {})).toThrow(
      'invalid --leader-elect (POOL_CONTROLLER_LEADER_ELECT): expected true or false, got "maybe"',
    );
  });

  it('repeats --sglang-router, and refuses a malformed target or a router given twice', () => {
    expect(
      parseConfig(['--sglang-router', 'a=http://r1:1', '--sglang-router', 'b=http://r2:2'], {})
        .sglangRouters,
    ).toEqual([
      { pool: 'a', url: 'http://r1:1' },
      { pool: 'b', url: 'http://r2:2' },
    ]);
    expect(() => parseConfig(['--sglang-router', 'http://r1:1'], {})).toThrow(
      'invalid --sglang-router (POOL_CONTROLLER_SGLANG_ROUTER): expected POOL=URL',
    );
    expect(() => parseConfig(['--sglang-router', 'a=ftp://r1'], {})).toThrow(ConfigError);
    expect(() => parseConfig(['--sglang-router', 'a=not a url'], {})).toThrow(
      'expected a router URL',
    );
    expect(() => parseConfig(['--sglang-router', 'a=http://u:secret@r1'], {})).toThrow(
      'must not carry credentials',
    );
    expect(() =>
      parseConfig(['--sglang-router', 'a=http://r1:1', '--sglang-router', 'b=http://r1:1/'], {}),
    ).toThrow('a router serves one pool');
  });

  it('repeats --epp-endpoints-file POOL=PATH[,role=…], and refuses a relative path or a path given twice', () => {
    expect(
      parseConfig(
        [
          '--epp-endpoints-file',
          'a=/run/epp/a.yaml',
          '--epp-endpoints-file',
          'p=/run/epp/p.yaml,role=prefill',
        ],
        {},
      ).eppEndpointsFiles,
    ).toEqual([
      { pool: 'a', path: '/run/epp/a.yaml' },
      { pool: 'p', path: '/run/epp/p.yaml', role: 'prefill' },
    ]);
    expect(
      parseConfig([], { POOL_CONTROLLER_EPP_ENDPOINTS_FILE: 'a=/x/a.yaml,b=/x/b.yaml' })
        .eppEndpointsFiles,
    ).toHaveLength(2);
    expect(() => parseConfig(['--epp-endpoints-file', 'a=epp.yaml'], {})).toThrow(
      'invalid --epp-endpoints-file (POOL_CONTROLLER_EPP_ENDPOINTS_FILE): expected POOL=PATH with a pool name and an absolute file path',
    );
    expect(() =>
      parseConfig(
        ['--epp-endpoints-file', 'a=/x/e.yaml', '--epp-endpoints-file', 'b=/x/e.yaml'],
        {},
      ),
    ).toThrow('/x/e.yaml is given twice');
    expect(() => parseConfig(['--epp-endpoints-file', 'a=/x/e.yaml,role=router'], {})).toThrow(
      'expected role=prefill or role=decode',
    );
    expect(() => parseConfig(['--epp-endpoints-file', 'a=/x/'], {})).toThrow('not a directory');
  });

  it('takes role=prefill|decode after a POOL=URL, and lets one router serve one of each', () => {
    const parse = (...values: string[]) =>
      parseConfig(
        values.flatMap((v) => ['--sglang-router', v]),
        {},
      ).sglangRouters;
    expect(parse('p=http://r:1,role=prefill', 'd=http://r:1/,role=decode', 'e=http://s:2')).toEqual(
      [
        { pool: 'p', url: 'http://r:1', role: 'prefill' },
        { pool: 'd', url: 'http://r:1', role: 'decode' },
        { pool: 'e', url: 'http://s:2' },
      ],
    );
    // A pool may be named `role`: its item has a URL.
    expect(parse('role=http://r:1')).toEqual([{ pool: 'role', url: 'http://r:1' }]);
    const refused = (value: string | string[], message: string) =>
      expect(() => parse(...[value].flat())).toThrow(message);
    refused(
      'p=http://r:1,role=encode',
      'expected role=prefill or role=decode after p=http://r:1, got role="encode"',
    );
    refused('role=prefill,p=http://r:1', '"role=prefill" must follow the POOL=URL it belongs to');
    refused('p=http://r:1,role=prefill,role=decode', 'role is given twice for p=http://r:1');
    refused(
      ['p=http://r:1,role=prefill', 'q=http://r:1,role=prefill'],
      'pools p (prefill) and q (prefill)',
    );
    refused(['p=http://r:1,role=prefill', 'q=http://r:1'], 'pools p (prefill) and q;');
    // An option never reaches across flags: the second flag's role has no item before it.
    refused(['p=http://r:1', 'role=prefill'], 'must follow the POOL=URL');
  });

  it('refuses a bootstrap port annotation that is not an annotation key', () => {
    expect(() => parseConfig(['--sglang-bootstrap-port-annotation', 'not a key'], {})).toThrow(
      'invalid --sglang-bootstrap-port-annotation (POOL_CONTROLLER_SGLANG_BOOTSTRAP_PORT_ANNOTATION)',
    );
  });

  it('refuses leader-election timings that can never work, naming the flags', () => {
    expect(() => parseConfig(['--leader-elect-renew-deadline', '15s'], {})).toThrow(
      'invalid --leader-elect-lease-duration (POOL_CONTROLLER_LEADER_ELECT_LEASE_DURATION): 15000 ms must be longer than --leader-elect-renew-deadline',
    );
    expect(() => parseConfig(['--leader-elect-retry-period', '9s'], {})).toThrow(
      'invalid --leader-elect-renew-deadline (POOL_CONTROLLER_LEADER_ELECT_RENEW_DEADLINE): 10000 ms must be longer than 1.2 × --leader-elect-retry-period',
    );
  });

  it('refuses a shutdown grace that does not fit in the shutdown timeout', () => {
    expect(() => parseConfig(['--shutdown-grace', '10s'], {})).toThrow(
      'invalid --shutdown-grace (POOL_CONTROLLER_SHUTDOWN_GRACE): 10000 ms must be shorter than --shutdown-timeout',
    );
    expect(parseConfig(['--shutdown-grace', '0'], {}).shutdownGraceMs).toBe(0);
  });

  it('refuses a duration longer than a Node.js timer can hold, naming the flag', () => {
    expect(() => parseConfig(['--resync-period', '600h'], {})).toThrow(
      'invalid --resync-period (POOL_CONTROLLER_RESYNC_PERIOD): "600h" is longer than the longest timer',
    );
    expect(() => parseConfig(['--shutdown-timeout', '600h'], {})).toThrow(
      'invalid --shutdown-timeout (POOL_CONTROLLER_SHUTDOWN_TIMEOUT)',
    );
    expect(parseConfig(['--resync-period', '596h'], {}).resyncPeriodMs).toBe(596 * 3_600_000);
  });

  it('has a variable for every flag, named after it', () => {
    expect(FLAGS.map((f) => envName(f.flag))).toContain('POOL_CONTROLLER_CELL_SIZE_ANNOTATION');
    expect(new Set(FLAGS.map((f) => envName(f.flag))).size).toBe(FLAGS.length);
  });

  it('lets a flag win over its variable', () => {
    const config = parseConfig(['--listen', '127.0.0.1:1234'], {
      POOL_CONTROLLER_LISTEN: '0.0.0.0:1',
    });
    expect(config.listen).toEqual({ host: '127.0.0.1', port: 1234 });
  });

  it('accepts --flag=value', () => {
    expect(parseConfig(['--namespace=serving'], {}).namespace).toBe('serving');
  });

  it('accepts every form of label selector the API server accepts, trimmed', () => {
    for (const selector of [
      'app',
      '!canary',
      'app=engine',
      'app==engine',
      'app!=engine',
      'tier in (a,b)',
      'tier notin (a,b)',
      'gen>3',
      'leaderworkerset.sigs.k8s.io/name, app = engine ,!canary,tier in (a,,b)',
    ]) {
      expect(parseConfig(['--selector', ` ${selector} `], {}).selector).toBe(selector);
    }
  });

  it("accepts '*' for all namespaces and 0/off to disable resync", () => {
    expect(parseConfig(['--namespace', '*'], {}).namespace).toBe('*');
    expect(parseConfig(['--resync-period', 'off'], {}).resyncPeriodMs).toBeNull();
    expect(parseConfig(['--resync-period', '0'], {}).resyncPeriodMs).toBeNull();
  });
});

describe('bad values fail at start, naming the flag and its variable', () => {
  const cases: Array<[string[], string]> = [
    [
      ['--source', 'cluster'],
      'invalid --source (POOL_CONTROLLER_SOURCE): expected kubernetes or simulated, got "cluster"',
    ],
    [['--listen', 'localhost'], 'invalid --listen (POOL_CONTROLLER_LISTEN): expected host:port'],
    [['--listen', '0.0.0.0:99999'], 'invalid --listen (POOL_CONTROLLER_LISTEN)'],
    [
      ['--namespace', 'Not_A_Namespace'],
      'invalid --namespace (POOL_CONTROLLER_NAMESPACE): expected a namespace name',
    ],
    [
      ['--pool-label', 'has spaces'],
      'invalid --pool-label (POOL_CONTROLLER_POOL_LABEL): expected a Kubernetes label key',
    ],
    [
      ['--cell-size-annotation', '/x'],
      'invalid --cell-size-annotation (POOL_CONTROLLER_CELL_SIZE_ANNOTATION)',
    ],
    [
      ['--port-name', 'ThisIsWayTooLongForAPort'],
      'invalid --port-name (POOL_CONTROLLER_PORT_NAME): expected a container port name',
    ],
    [
      ['--resync-period', '10'],
      'invalid --resync-period (POOL_CONTROLLER_RESYNC_PERIOD): expected a duration such as 30m or 10h, or 0/off to disable, got "10"',
    ],
    [
      ['--log-level', 'loud'],
      'invalid --log-level (POOL_CONTROLLER_LOG_LEVEL): expected one of fatal, error, warn, info, debug, trace, silent, got "loud"',
    ],
    [
      ['--shutdown-timeout', '0s'],
      'invalid --shutdown-timeout (POOL_CONTROLLER_SHUTDOWN_TIMEOUT): expected a positive duration',
    ],
    [
      ['--selector', '  '],
      'invalid --selector (POOL_CONTROLLER_SELECTOR): expected a label selector, got an empty value',
    ],
    [
      ['--selector', 'a=b=c'],
      `invalid --selector (POOL_CONTROLLER_SELECTOR): expected a label selector such as app=engine,tier in (a,b),!canary; "a=b=c" is not one: at character 4: expected ',' or the end after a requirement, found '='`,
    ],
    [
      ['--selector', 'app in (a,b'],
      "invalid --selector (POOL_CONTROLLER_SELECTOR): expected a label selector such as app=engine,tier in (a,b),!canary; \"app in (a,b\" is not one: at character 12: expected ',' or ')' in the value list, found the end",
    ],
    [['--selector', 'app=Not Valid'], 'invalid --selector (POOL_CONTROLLER_SELECTOR)'],
    [['--selector', 'tier=web_'], 'value "web_" is not a label value'],
    [['--selector', 'Example.com/pool'], 'prefix that is not a DNS subdomain'],
    [['--selector', 'app,'], "expected a requirement after ','"],
  ];
  for (const [argv, message] of cases) {
    it(`rejects ${argv.join(' ')}`, () => {
      expect(errorOf(argv)).toContain(message);
    });
  }

  it('names the selector variable when the bad selector came from the environment', () => {
    expect(errorOf([], { POOL_CONTROLLER_SELECTOR: 'a=b=c' })).toContain(
      'invalid --selector (POOL_CONTROLLER_SELECTOR): expected a label selector',
    );
  });

  it('names the variable when the bad value came from the environment', () => {
    expect(errorOf([], { POOL_CONTROLLER_LOG_LEVEL: 'chatty' })).toContain(
      'invalid --log-level (POOL_CONTROLLER_LOG_LEVEL)',
    );
  });

  it('rejects an unknown flag and points at --help', () => {
    expect(errorOf(['--nmespace', 'x'])).toMatch(/Unknown option '--nmespace'.*\(see --help\)/);
  });

  it('rejects a stray positional argument', () => {
    expect(errorOf(['simulated'])).toMatch(/simulated.*\(see --help\)/);
  });
});

describe('--help', () => {
  it('is requested with --help or -h and lists every flag with its variable and default', () => {
    expect(() => parseConfig(['--help'], {})).toThrow(HelpRequested);
    expect(() => parseConfig(['-h'], {})).toThrow(HelpRequested);
    const text = helpText();
    for (const spec of FLAGS) {
      expect(text).toContain(`--${spec.flag}${spec.kind === 'boolean' ? '[' : ' '}`);
      expect(text).toContain(envName(spec.flag));
    }
    expect(text).toContain('default: 0.0.0.0:8080');
  });

  it('groups the flags by concern (source, HTTP, leadership, sinks, logging), each once', () => {
    const text = helpText();
    const headings = Object.values(FLAG_GROUPS).map((h) => text.indexOf(`\n${h}:\n`));
    expect(headings.every((at) => at > 0)).toBe(true);
    expect([...headings].sort((a, b) => a - b)).toEqual(headings);
    const under = (flag: string) =>
      Object.values(FLAG_GROUPS).findLast(
        (h) => text.indexOf(`\n${h}:\n`) < text.indexOf(`--${flag} `),
      );
    expect(under('sglang-router')).toBe(FLAG_GROUPS.sinks);
    expect(under('listen')).toBe(FLAG_GROUPS.http);
    expect(under('leader-elect-lease-duration')).toBe(FLAG_GROUPS.leadership);
    expect(under('log-level')).toBe(FLAG_GROUPS.logging);
    expect(under('namespace')).toBe(FLAG_GROUPS.source);
    for (const spec of FLAGS) {
      const line = `\n  --${spec.flag}${spec.kind === 'boolean' ? '' : ' '}${spec.valueName}\n`;
      expect(text.split(line), spec.flag).toHaveLength(2);
    }
  });

  it('shows every default one way, after the variable, and no description repeats one', () => {
    const text = helpText();
    for (const spec of FLAGS) {
      expect(text).toContain(`env: ${envName(spec.flag)}   default: ${spec.defaultText ?? 'none'}`);
      expect(spec.description, spec.flag).not.toMatch(/\bdefault[:,]|by default/i);
    }
  });
});

describe('--version', () => {
  it('is requested with --version, before any other flag is checked, and listed in --help', () => {
    expect(() => parseConfig(['--version'], {})).toThrow(VersionRequested);
    expect(() => parseConfig(['--version', '--listen', 'nowhere'], {})).toThrow(VersionRequested);
    expect(helpText()).toMatch(/\n {2}--version\n {6}Print the version/);
  });
});

describe('value parsers', () => {
  it('reads Go-style durations', () => {
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('1.5s')).toBe(1_500);
    expect(parseDuration('10')).toBeUndefined();
    expect(parseDuration('5 s')).toBeUndefined();
  });

  it('reads listen addresses, IPv6 in brackets', () => {
    expect(parseListen('[::]:8080')).toEqual({ host: '::', port: 8080 });
    expect(parseListen(':9090')).toEqual({ host: '0.0.0.0', port: 9090 });
    expect(parseListen('::8080')).toBeUndefined();
  });
});

describe('loadAdminToken', () => {
  it('reads the token, trimming the newline a Secret usually ends with', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'token-'));
    await writeFile(join(dir, 'token'), 'abc123\n');
    expect(await loadAdminToken(join(dir, 'token'))).toBe('abc123');
  });

  it('refuses an empty or missing file, naming the flag', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'token-'));
    await writeFile(join(dir, 'empty'), '\n');
    await expect(loadAdminToken(join(dir, 'empty'))).rejects.toThrow(
      /invalid --admin-token-file \(POOL_CONTROLLER_ADMIN_TOKEN_FILE\): .*empty is empty/,
    );
    await expect(loadAdminToken(join(dir, 'missing'))).rejects.toThrow(
      /invalid --admin-token-file \(POOL_CONTROLLER_ADMIN_TOKEN_FILE\): cannot read/,
    );
  });

  async function tokenFile(content: string | Buffer, mode = 0o600): Promise<string> {
    const path = join(await mkdtemp(join(tmpdir(), 'token-')), 'token');
    await writeFile(path, content, { mode });
    await chmod(path, mode);
    return path;
  }

  async function refusal(path: string): Promise<Error> {
    const error = await readAdminTokenFile(path).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error).toBeInstanceOf(ConfigError);
    return error as Error;
  }

  it('refuses a token with whitespace inside, naming the flag and never echoing the token', async () => {
    for (const token of ['abc def-SECRET', 'abc\tdef-SECRET', 'abc\ndef-SECRET\n']) {
      const error = await refusal(await tokenFile(token));
      expect(error.message).toMatch(
        /^invalid --admin-token-file \(POOL_CONTROLLER_ADMIN_TOKEN_FILE\): the secret in .* contains whitespace \(at character 4\)/,
      );
      expect(error.message).not.toContain('SECRET');
      expect(error.message).not.toContain('abc');
    }
  });

  it('refuses a token file that is not valid UTF-8', async () => {
    const error = await refusal(await tokenFile(Buffer.from([0x61, 0x62, 0xff, 0xfe, 0x63])));
    expect(error.message).toMatch(/--admin-token-file .* is not valid UTF-8 text$/);
  });

  it('refuses a token an HTTP header cannot carry unchanged (non-ASCII, control characters)', async () => {
    for (const token of ['tökén-SECRET', 'ab\u0001c-SECRET']) {
      const error = await refusal(await tokenFile(token));
      expect(error.message).toMatch(
        /contains a character outside visible ASCII \(at character \d\)/,
      );
      expect(error.message).not.toContain('SECRET');
    }
  });

  it('warns about a token file its group or every user may read, without failing', async () => {
    expect(await readAdminTokenFile(await tokenFile('abc\n', 0o600))).toEqual({
      secret: 'abc',
      warnings: [],
    });
    const world = await readAdminTokenFile(await tokenFile('abc\n', 0o644));
    expect(world.secret).toBe('abc');
    expect(world.warnings).toEqual([
      expect.stringMatching(
        /^--admin-token-file \(POOL_CONTROLLER_ADMIN_TOKEN_FILE\): .* is readable by every user \(mode 0644\)/,
      ),
    ]);
    const group = await readAdminTokenFile(await tokenFile('abc\n', 0o640));
    expect(group.warnings).toEqual([
      expect.stringContaining('is readable by its group (mode 0640)'),
    ]);
    const heard: string[] = [];
    expect(await loadAdminToken(await tokenFile('abc', 0o644), (w) => heard.push(w))).toBe('abc');
    expect(heard).toHaveLength(1);
    expect(heard[0]).not.toContain('abc\n');
  });
});

describe('--admin-allowed-hosts', () => {
  it('takes host names, repeated or comma-separated, lowercased', () => {
    expect(
      parseConfig(['--admin-allowed-hosts', 'Ctl.Example', '--admin-allowed-hosts', 'a.b,c'], {})
        .adminAllowedHosts,
    ).toEqual(['ctl.example', 'a.b', 'c']);
    expect(
      parseConfig([], { POOL_CONTROLLER_ADMIN_ALLOWED_HOSTS: 'x.y' }).adminAllowedHosts,
    ).toEqual(['x.y']);
  });

  it('refuses a value with a port or a scheme, naming the flag', () => {
    expect(() => parseConfig(['--admin-allowed-hosts', 'http://x'], {})).toThrow(
      /^invalid --admin-allowed-hosts \(POOL_CONTROLLER_ADMIN_ALLOWED_HOSTS\): expected host names/,
    );
  });
});

describe('--max-event-streams', () => {
  it('takes a whole number up to half the connection cap', () => {
    expect(parseConfig(['--max-event-streams', '512'], {}).maxEventStreams).toBe(512);
    for (const bad of ['0', '513', '1e3', 'many']) {
      expect(() => parseConfig(['--max-event-streams', bad], {}), bad).toThrow(
        /^invalid --max-event-streams \(POOL_CONTROLLER_MAX_EVENT_STREAMS\): expected a whole number from 1 to 512/,
      );
    }
  });
});

describe('--health-probe-listen', () => {
  it('takes host:port, or 0/off for none', () => {
    expect(parseConfig(['--health-probe-listen', ':8081'], {}).healthProbeListen).toEqual({
      host: '0.0.0.0',
      port: 8081,
    });
    expect(parseConfig(['--health-probe-listen', 'off'], {}).healthProbeListen).toBeUndefined();
  });

  it("refuses --listen's own port, naming both flags", () => {
    expect(() => parseConfig(['--health-probe-listen', '127.0.0.1:8080'], {})).toThrow(
      /^invalid --health-probe-listen \(POOL_CONTROLLER_HEALTH_PROBE_LISTEN\): port 8080 is --listen's/,
    );
  });
});

describe('the effective flags (GET /flagz)', () => {
  const entry = (flags: ReturnType<typeof parseConfig>['flags'], flag: string) =>
    flags.find((f) => f.flag === flag);

  it('says for every flag where its value came from: flag, environment or default', () => {
    const { flags } = parseConfig(
      ['--listen', '127.0.0.1:9000', '--sglang-router', 'engine=http://r:30000'],
      {
        POOL_CONTROLLER_LOG_LEVEL: 'debug',
        POOL_CONTROLLER_LISTEN: '0.0.0.0:1',
      },
    );
    expect(flags.map((f) => f.flag)).toEqual(FLAGS.map((s) => s.flag));
    expect(entry(flags, 'listen')).toEqual({
      flag: 'listen',
      env: 'POOL_CONTROLLER_LISTEN',
      value: '127.0.0.1:9000',
      from: 'flag',
    });
    expect(entry(flags, 'log-level')).toMatchObject({ value: 'debug', from: 'environment' });
    expect(entry(flags, 'sglang-router')).toMatchObject({
      value: ['engine=http://r:30000'],
      from: 'flag',
    });
    expect(entry(flags, 'drift-interval')).toMatchObject({
      value: FLAGS.find((s) => s.flag === 'drift-interval')!.defaultText,
      from: 'default',
    });
  });

  it('never shows where a secret is: a set secret flag is (withheld)', () => {
    const { flags } = parseConfig(
      ['--admin-token-file', '/var/run/secrets/token', '--kubeconfig', '/home/me/.kube/config'],
      { POOL_CONTROLLER_SGLANG_ROUTER_API_KEY_FILE: '/keys/router' },
    );
    for (const flag of ['admin-token-file', 'kubeconfig', 'sglang-router-api-key-file']) {
      expect(entry(flags, flag)?.value, flag).toBe(WITHHELD);
    }
    expect(JSON.stringify(flags)).not.toMatch(/secrets\/token|\.kube\/config|keys\/router/);
  });
});

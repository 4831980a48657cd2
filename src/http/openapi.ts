/**
 * `openapi.yaml`, generated from the routes' zod schemas. The committed file is the API's
 * contract; `test/routes/openapi.test.ts` (part of `npm test`, so of CI) fails when it differs
 * from what the routes generate, and `npm run openapi` rewrites it.
 */
import { LWS_LABELS } from '../pools/labels.js';
import { assembleService } from '../service/assemble.js';
import { SimulatedPodSource } from '../simulated/simulated-source.js';
import { buildServer } from './app.js';

/**
 * The OpenAPI document as YAML. It needs only the routes, so the service behind them is built but
 * never started (no stream opened, no timer set).
 */
export async function renderOpenApi(): Promise<string> {
  const podSource = new SimulatedPodSource({ story: false, pools: [] });
  const service = assembleService({
    podSource,
    sourceKind: 'simulated',
    labels: LWS_LABELS,
    portName: 'http',
  });
  const app = await buildServer(service, { openApi: true });
  try {
    await app.ready();
    return app.swagger({ yaml: true });
  } finally {
    await app.close();
    await service.stop();
  }
}

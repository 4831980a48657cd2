/**
 * The story the simulated source plays: what a person running `npm start` watches happen.
 *
 * An intro brings two pools of multi-pod cells up (scheduled, then ready cell by cell); then a
 * cycle repeats forever: a container restart and its recovery, a graceful termination and its
 * replacement (new uid), a scale-up of the first pool and a scale-down of the second, and both
 * undone, so the world at the end of a cycle has the same cells as at its start and the cycle can
 * play again. Every step is one tick; the timing lives in the source.
 */
import type { SimulatedPoolSpec, SimulatedWorld, WorldChange } from './simulated-world.js';

/**
 * One tick of the story: `run()` changes the world and returns the changes a watch would have
 * carried, in order.
 */
interface StoryStep {
  /** What happens, for the debug log and for tests to follow the story by name. */
  name: string;
  run(): WorldChange[];
}

/**
 * The steps the source plays: `intro` once, then `cycle` for ever (the cycle ends where it began,
 * so it can repeat).
 */
export interface Story {
  intro: StoryStep[];
  cycle: StoryStep[];
}

/** The default world: SGLang-like engine cells (leader + 1 worker) and 4-pod trainer cells. */
export const DEFAULT_SIMULATED_POOLS: readonly SimulatedPoolSpec[] = Object.freeze([
  { name: 'engine', cells: 2, size: 2, containerPort: 30000 },
  { name: 'trainer', cells: 2, size: 4, containerPort: 8080 },
]);

/** The story needs two pools with at least two cells of at least two pods. */
function validateStoryPools(pools: readonly SimulatedPoolSpec[]): void {
  const [a, b] = pools;
  if (!a || !b || a.cells < 2 || b.cells < 2 || a.size < 2 || b.size < 2) {
    throw new RangeError(
      'the simulated story needs two pools of at least 2 cells of at least 2 pods each',
    );
  }
}

/** Creates the pools' cells (unscheduled) in `world` and returns the story to play over them. */
export function createStory(world: SimulatedWorld, pools: readonly SimulatedPoolSpec[]): Story {
  validateStoryPools(pools);
  const a = pools[0]!;
  const b = pools[1]!;
  for (const pool of pools) {
    for (let group = 0; group < pool.cells; group += 1) world.createCell(pool, group);
  }

  const cellA = (group: number): string[] => world.cellPods(a.name, group);
  const cellB = (group: number): string[] => world.cellPods(b.name, group);
  const allPods = (): string[] =>
    pools.flatMap((pool) =>
      Array.from({ length: pool.cells }, (_, group) => world.cellPods(pool.name, group)).flat(),
    );
  const restartedGroup = a.cells - 1;
  const extraGroup = a.cells;
  const shrunkGroup = b.cells - 1;
  // The last worker of a cell: the pod whose crash takes the whole cell down in tensor-parallel serving.
  const lastWorker = (): string[] => cellA(restartedGroup).slice(-1);
  const leaderOf = (group: number): string[] => cellA(group).slice(0, 1);

  const intro: StoryStep[] = [
    { name: 'pods scheduled and started', run: () => world.start(allPods()) },
    ...Array.from({ length: a.cells }, (_, group) => ({
      name: `${a.name} cell ${group} ready`,
      run: () => world.ready(cellA(group)),
    })),
    {
      name: `${b.name} cells ready`,
      run: () => world.ready(Array.from({ length: b.cells }, (_, group) => cellB(group)).flat()),
    },
  ];

  const cycle: StoryStep[] = [
    {
      name: `container restart in ${a.name} cell ${restartedGroup}`,
      run: () => world.restartContainer(lastWorker()),
    },
    {
      name: `${a.name} cell ${restartedGroup} recovered`,
      run: () => world.ready(lastWorker()),
    },
    {
      name: `graceful termination of the ${a.name} cell 0 leader`,
      run: () => world.terminate(leaderOf(0)),
    },
    {
      name: `${a.name} cell 0 leader replaced`,
      run: () => {
        const gone = world.remove(leaderOf(0));
        return [...gone, ...world.createCell(a, 0)];
      },
    },
    { name: `${a.name} cell 0 replacement started`, run: () => world.start(cellA(0)) },
    { name: `${a.name} cell 0 ready again`, run: () => world.ready(cellA(0)) },
    {
      name: `scale-up: ${a.name} cell ${extraGroup} created`,
      run: () => world.createCell(a, extraGroup),
    },
    { name: `${a.name} cell ${extraGroup} started`, run: () => world.start(cellA(extraGroup)) },
    { name: `${a.name} cell ${extraGroup} ready`, run: () => world.ready(cellA(extraGroup)) },
    {
      name: `scale-down: ${b.name} cell ${shrunkGroup} terminating`,
      run: () => world.terminate(cellB(shrunkGroup)),
    },
    { name: `${b.name} cell ${shrunkGroup} gone`, run: () => world.remove(cellB(shrunkGroup)) },
    {
      name: `scale-down: ${a.name} cell ${extraGroup} terminating`,
      run: () => world.terminate(cellA(extraGroup)),
    },
    { name: `${a.name} cell ${extraGroup} gone`, run: () => world.remove(cellA(extraGroup)) },
    {
      name: `scale-up: ${b.name} cell ${shrunkGroup} created`,
      run: () => world.createCell(b, shrunkGroup),
    },
    { name: `${b.name} cell ${shrunkGroup} started`, run: () => world.start(cellB(shrunkGroup)) },
    { name: `${b.name} cell ${shrunkGroup} ready`, run: () => world.ready(cellB(shrunkGroup)) },
  ];

  return { intro, cycle };
}

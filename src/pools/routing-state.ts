/**
 * The desired routing state: what every consumer of the controller's judgement (an SGLang router,
 * an EndpointSlice) should see. The coordinator's pipeline renders it from the reconciled cells,
 * validates it and hands it to the sinks; it is plain data so it can be served, logged and
 * compared as is.
 */

/** One alive cell, as a consumer routes to it. */
export interface RoutedCell {
  /** The cell id, e.g. `engine-00001`. */
  cell: string;
  /** The cell's generation: changes when a consumer must reconnect. */
  generation: string;
  /** `host:port` of the cell's leader (IPv6 hosts in brackets). */
  address: string;
}

/** One pool's routing: its alive cells, sorted by address so equal states compare equal. */
export interface PoolRouting {
  namespace: string;
  pool: string;
  cells: RoutedCell[];
}

/** Every pool with at least one cell, sorted by namespace then pool name. */
export interface RoutingState {
  pools: PoolRouting[];
}

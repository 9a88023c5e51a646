import type { Broker } from "../broker.js";
import { openSanctionsBroker } from "./opensanctions/opensanctions.broker.js";
import { sumsubBroker } from "./sumsub/sumsub.broker.js";

/** Every broker the service ships, by id. A new vendor is one folder and one line here. */
// biome-ignore lint/suspicious/noExplicitAny: brokers of different config and credential types share one registry
export const BROKERS: ReadonlyMap<string, Broker<any, any>> = new Map(
  [sumsubBroker, openSanctionsBroker].map((b) => [b.id, b]),
);

// biome-ignore lint/suspicious/noExplicitAny: see BROKERS
export function brokerOf(brokerId: string): Broker<any, any> | undefined {
  return BROKERS.get(brokerId);
}

import dns from "node:dns";
import net from "node:net";

import ipaddr from "ipaddr.js";

/**
 * Where a webhook may not go unless CDS_ALLOW_PRIVATE_TARGETS is on: anything that is not the
 * public internet. A partner-supplied URL that reaches the service's own network (a database,
 * an admin port, the cloud metadata endpoint) would turn webhooks into a request forgery tool.
 *
 * The ranges are ipaddr.js's classification (IANA's special-purpose registries): only `unicast`
 * is public. Loopback, private, link-local, shared (100.64/10), multicast, reserved,
 * documentation, benchmarking, unique-local (fd00:ec2::254, a metadata address) are not.
 * IPv6 forms that carry an IPv4 address (IPv4-mapped and -compatible, SIIT, NAT64, 6to4, Teredo)
 * are judged by the IPv4 address they reach.
 */

/** The IPv4 address an IPv6 transition form reaches, for the forms that carry one. */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const bytes = address.toByteArray();
  // IPv4-compatible (::a.b.c.d, ::/96, deprecated): ipaddr.js calls `::7f00:1` unicast.
  if (bytes.slice(0, 12).every((b) => b === 0)) return new ipaddr.IPv4(bytes.slice(12, 16));
  switch (address.range()) {
    case "ipv4Mapped": // ::ffff:a.b.c.d
    case "rfc6145": // SIIT ::ffff:0:a.b.c.d
    case "rfc6052": // NAT64 64:ff9b::/96 (and local-use 64:ff9b:1::/48)
      return new ipaddr.IPv4(bytes.slice(12, 16));
    case "6to4": // 2002:AABB:CCDD::/48
      return new ipaddr.IPv4(bytes.slice(2, 6));
    case "teredo": // the client's address, stored inverted in the last 32 bits
      return new ipaddr.IPv4(bytes.slice(12, 16).map((b) => b ^ 0xff));
    default:
      return undefined;
  }
}

/** True for an IP address outside the public internet, in any spelling. */
export function isPrivateAddress(address: string): boolean {
  // net.isIP first: ipaddr.js also reads classful and hex IPv4 forms that no resolver answers with.
  if (net.isIP(address) === 0 || !ipaddr.isValid(address)) return true;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === "ipv4") return parsed.range() !== "unicast";
  const v6 = parsed as ipaddr.IPv6;
  const v4 = embeddedIPv4(v6);
  if (v4) return v4.range() !== "unicast";
  return v6.range() !== "unicast";
}

export class BlockedTargetError extends Error {
  readonly code = "EBLOCKEDTARGET";
  constructor(host: string, address: string) {
    super(
      `${host === address ? host : `${host} resolves to ${address}, which`} is a private, loopback, ` +
        "link-local or otherwise non-public address; webhooks may only go to public addresses " +
        "(CDS_ALLOW_PRIVATE_TARGETS is off)",
    );
    this.name = "BlockedTargetError";
  }
}

interface LookupAddress {
  address: string;
  family: number;
}

/** The hostname of a URL without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
}

/** Every address a host resolves to, the way a connection would resolve it. */
export async function resolveHost(host: string): Promise<LookupAddress[]> {
  if (net.isIP(host)) return [{ address: host, family: net.isIP(host) }];
  return dns.promises.lookup(host, { all: true, verbatim: true });
}

/**
 * Refuses a host any of whose addresses is not public. All of them are checked, not just the
 * first, so a name that answers with a public and a private address is refused.
 */
export async function checkTargetHost(host: string): Promise<void> {
  for (const { address } of await resolveHost(host)) {
    if (isPrivateAddress(address)) throw new BlockedTargetError(host, address);
  }
}

/** The longest URL the service calls out to: a webhook endpoint's, a vendor's base URL. */
export const MAX_TARGET_URL_LENGTH = 2048;

/**
 * Why the service may not call `url`'s host, or undefined: unless private targets are allowed,
 * a host with a non-public address, or one that does not resolve.
 */
export async function targetProblem(url: URL, allowPrivate: boolean): Promise<string | undefined> {
  if (allowPrivate) return undefined;
  try {
    await checkTargetHost(hostOf(url));
    return undefined;
  } catch (err) {
    if (err instanceof BlockedTargetError) return err.message;
    return `host ${url.hostname} does not resolve (${(err as NodeJS.ErrnoException).code ?? "lookup failed"})`;
  }
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for `http.request`: the connection goes to the address that was checked here, so a
 * name that changes its answer between a check and the connect (DNS rebinding) cannot slip
 * through. With `allowPrivate` it resolves as usual.
 */
export function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: { all?: boolean }, callback: LookupCallback): void => {
    resolveHost(hostname).then(
      (addresses) => {
        const blocked = allowPrivate ? undefined : addresses.find((a) => isPrivateAddress(a.address));
        if (blocked) {
          callback(new BlockedTargetError(hostname, blocked.address), "", 0);
          return;
        }
        const first = addresses[0];
        if (!first) {
          const err: NodeJS.ErrnoException = new Error(`${hostname} has no address`);
          err.code = "ENOTFOUND";
          callback(err, "", 0);
          return;
        }
        if (options.all) callback(null, addresses);
        else callback(null, first.address, first.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, "", 0),
    );
  };
}

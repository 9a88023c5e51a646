import dns from "node:dns";
import net from "node:net";

/**
 * Where a webhook may not go unless CDS_ALLOW_PRIVATE_TARGETS is on: anything that is not the
 * public internet. A partner-supplied URL that reaches the service's own network (a database,
 * an admin port, the cloud metadata endpoint) would turn webhooks into a request forgery tool.
 */
const BLOCKED: Array<[string, number, "ipv4" | "ipv6"]> = [
  ["0.0.0.0", 8, "ipv4"], // "this network"
  ["10.0.0.0", 8, "ipv4"], // private
  ["100.64.0.0", 10, "ipv4"], // carrier-grade NAT (also a cloud metadata range)
  ["127.0.0.0", 8, "ipv4"], // loopback
  ["169.254.0.0", 16, "ipv4"], // link-local, cloud metadata 169.254.169.254
  ["172.16.0.0", 12, "ipv4"], // private
  ["192.0.0.0", 24, "ipv4"], // IETF protocol assignments
  ["192.0.2.0", 24, "ipv4"], // documentation
  ["192.88.99.0", 24, "ipv4"], // 6to4 relay anycast
  ["192.168.0.0", 16, "ipv4"], // private
  ["198.18.0.0", 15, "ipv4"], // benchmarking
  ["198.51.100.0", 24, "ipv4"], // documentation
  ["203.0.113.0", 24, "ipv4"], // documentation
  ["224.0.0.0", 4, "ipv4"], // multicast
  ["240.0.0.0", 4, "ipv4"], // reserved, broadcast
  ["::", 128, "ipv6"], // unspecified
  ["::1", 128, "ipv6"], // loopback
  ["64:ff9b:1::", 48, "ipv6"], // local-use NAT64
  ["100::", 64, "ipv6"], // discard
  ["2001:db8::", 32, "ipv6"], // documentation
  ["fc00::", 7, "ipv6"], // unique local, incl. fd00:ec2::254 (metadata)
  ["fe80::", 10, "ipv6"], // link-local
  ["fec0::", 10, "ipv6"], // site-local (deprecated)
  ["ff00::", 8, "ipv6"], // multicast
];

const blockList = new net.BlockList();
for (const [address, prefix, family] of BLOCKED) blockList.addSubnet(address, prefix, family);

/** The IPv4 address carried in the low 32 bits of a NAT64 (64:ff9b::/96) address. */
function nat64Embedded(address: string): string | undefined {
  const match = /^64:ff9b::(?:ffff:)?([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!match) return undefined;
  const hi = Number.parseInt(match[1] as string, 16);
  const lo = Number.parseInt(match[2] as string, 16);
  return [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join(".");
}

/** True for an IP address outside the public internet (IPv4-mapped IPv6 included). */
export function isPrivateAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 0) return true;
  if (family === 4) return blockList.check(address, "ipv4");
  if (blockList.check(address, "ipv6")) return true;
  const embedded = nat64Embedded(address);
  return embedded !== undefined && blockList.check(embedded, "ipv4");
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

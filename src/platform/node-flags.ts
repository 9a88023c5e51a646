/**
 * The flags of `node` the service's processes run with (decision 0035). V8 sizes its heap when the
 * process starts, so they go on node's command line: `npm start` and the Dockerfile's CMD pass
 * them (test/node-flags.test.ts holds both to this list), and so does the benchmarks' launcher,
 * for the service and for the bare server it is compared with.
 *
 * `--max-semi-space-size=32`: a young generation of up to 32 MB a semi-space, not V8's 16. Every
 * request and every case leaves short-lived objects (parsed bodies, rows, statements' texts) that
 * live for a batch's few milliseconds; with 16 MB a scavenge came every 40 ms under load and found
 * most of them still alive, copied and promoted them. With twice the room, more are dead by then:
 * fewer scavenges (251 against 446 in one benchmark run), each longer (5.7 ms against 3.9 on
 * average), less time in all, and less promoted for the old generation's collector.
 */
export const SERVICE_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=32"];

import { APIConnectionError, APIError } from 'openai';
import type { FailureMode } from '../support/fake-upstream';
import { FaultCluster, useFaultCluster, withReplicaLogs } from '../support/fault-cluster';
import { chargedAmong, moneyInvariantViolations, servedCostMicros, waitUntilChargedExactlyOnce } from '../support/fault-money';
import { BROKEN_MODEL } from '../support/fault-models';
import { Outcome, sdkFor, sleep, startLoad, summarize, timedChat, timedGet } from '../support/fault-requests';

/**
 * Every malformed upstream stream shape of issue 13 item 3, from a second fake upstream, while two
 * gateway processes also serve normal requests from the first: the broken request ends with 502
 * upstream_error before the first byte or an in-band error event after it, is charged nothing, and
 * every other request and process carries on.
 */
jest.setTimeout(120_000);

const MALFORMED: FailureMode[] = ['notSse', 'invalidJsonData', 'truncatedChunked', 'resetMidStream', 'wrongContentType', 'endlessLine'];
const BROKEN_CLIENT_TIMEOUT_MS = 20_000;

describe('Faults: malformed upstream streams (2 gateway processes)', () => {
  let cluster: FaultCluster;
  let broken: { accountId: string; key: string };
  let healthy: { accountId: string; key: string };
  const brokenRequestIds: string[] = [];
  const timings = useFaultCluster({ replicas: 2, badUpstream: true }, 'Malformed stream timings', (started) => (cluster = started));

  beforeAll(async () => {
    broken = await cluster.admin.createAccount({ creditsUsd: 10 });
    healthy = await cluster.admin.createAccount({ creditsUsd: 10 });
  });

  /** 502 upstream_error before the first byte, or a 200 stream that ends in an in-band upstream_error event without [DONE]. */
  function endedAsUpstreamError(o: Outcome): boolean {
    if (o.clientError) return false;
    if (o.status === 502) return o.code === 'upstream_error';
    return o.status === 200 && o.code === 'upstream_error' && !o.completedStream;
  }

  for (const mode of MALFORMED) {
    it(
      `${mode}: that request ends in upstream_error with no charge; concurrent requests and both processes unaffected`,
      withReplicaLogs(
        () => cluster,
        async () => {
          cluster.badUpstream!.resetState();
          cluster.badUpstream!.failure = mode;
          const others = startLoad(cluster.gateways, healthy.key, { workers: 1, pauseMs: 10 });
          await sleep(200);

          const rawOutcomes = await Promise.all(
            cluster.gateways.map((g) => timedChat(g, broken.key, { model: BROKEN_MODEL.id, stream: true, timeoutMs: BROKEN_CLIENT_TIMEOUT_MS })),
          );
          // The official client, streaming, as an application reads it: an error, not a hang nor a silent end.
          const sdkStarted = Date.now();
          const sdkError = await readWithSdk(cluster, broken.key);
          const sdkMs = Date.now() - sdkStarted;
          await sleep(200);
          const otherOutcomes = await others.stop();
          brokenRequestIds.push(...rawOutcomes.map((o) => o.requestId).filter((id): id is string => id !== null));

          timings.push(
            `${mode}: ${rawOutcomes.map((o) => `${o.replica} ${o.status} ${o.code ?? ''} in ${o.ms} ms`).join('; ')}; SDK: ${sdkError} in ${sdkMs} ms; ` +
              `others: ${otherOutcomes.length} requests, max ${Math.max(0, ...otherOutcomes.map((o) => o.ms))} ms`,
          );

          expect(rawOutcomes.filter((o) => !endedAsUpstreamError(o))).toEqual([]);
          expect(rawOutcomes.every((o) => o.requestId)).toBe(true);
          expect(sdkError).toMatch(/^APIError/);
          const disturbed = otherOutcomes.filter((o) => o.status !== 200 || o.clientError || !o.content || (o.stream && !o.completedStream));
          expect({ disturbed: disturbed.slice(0, 3), summary: summarize(otherOutcomes) }).toEqual({ disturbed: [], summary: summarize(otherOutcomes) });
          expect(await waitUntilChargedExactlyOnce(cluster, otherOutcomes.map((o) => o.requestId!), servedCostMicros(cluster))).toEqual([]);
          for (const g of cluster.gateways) {
            expect({ replica: g.name, exit: g.exit, healthz: (await timedGet(`${g.url}/healthz`)).status }).toEqual({
              replica: g.name,
              exit: null,
              healthz: 200,
            });
          }
          const charged = await chargedAmong(cluster, rawOutcomes.map((o) => o.requestId!));
          expect(charged).toEqual([]);
        },
      ),
    );
  }

  it('afterwards: the account of the broken requests paid nothing, their usage records cost 0, money invariants hold everywhere', async () => {
    await sleep(1500);
    const [account] = await cluster.query<{ balance: string; charges: number }>(
      `SELECT balance_micros AS balance, (SELECT count(*)::int FROM ledger_entries WHERE account_id = $1 AND kind = 'charge') AS charges
         FROM accounts WHERE id = $1`,
      [broken.accountId],
    );
    expect(account).toEqual({ balance: '10000000', charges: 0 });
    const costly = await cluster.query(`SELECT request_id, cost_micros FROM usage_records WHERE account_id = $1 AND cost_micros <> 0`, [
      broken.accountId,
    ]);
    expect(costly).toEqual([]);
    expect(await moneyInvariantViolations(cluster)).toEqual([]);
  });
});

/** Reads a streamed chat of the broken model with the SDK; the error it ended with, as "Class: message". */
async function readWithSdk(cluster: FaultCluster, key: string): Promise<string> {
  try {
    const stream = await sdkFor(cluster.gateways[0], key, BROKEN_CLIENT_TIMEOUT_MS).chat.completions.create({
      model: BROKEN_MODEL.id,
      messages: [{ role: 'user', content: 'Hi' }],
      stream: true,
    });
    for await (const _chunk of stream) {
      // Consumed only to reach the end or the error.
    }
    return 'no error';
  } catch (err) {
    // A timeout or a broken connection is an APIConnectionError: not the clear answer required.
    const answered = err instanceof APIError && !(err instanceof APIConnectionError);
    return `${answered ? 'APIError' : 'no answer'} (${(err as Error).constructor.name}): ${(err as Error).message}`;
  }
}

import { createServer, IncomingMessage, ServerResponse } from 'node:http';

/**
 * A fast OpenAI-compatible upstream for benchmarks: fixed answers, no work. Model `bench-slow` streams
 * one chunk every SLOW_CHUNK_MS (for the many-open-streams run); BENCH_FAIL_RATIO of the requests get a 500.
 * Prints its port on stdout.
 */
const SLOW_CHUNKS = 20;
const SLOW_CHUNK_MS = 500;
const WORDS = ['Benchmarks', ' measure', ' what', ' the', ' gateway', ' adds', ' over', ' a', ' direct', ' call.'];

const completion = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'bench-model',
  choices: [{ index: 0, message: { role: 'assistant', content: WORDS.join(''), refusal: null }, logprobs: null, finish_reason: 'stop' }],
  usage: { prompt_tokens: 12, completion_tokens: 10, total_tokens: 22 },
});

function chunk(delta: object, finish: string | null): string {
  const payload = { id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'bench-model', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] };
  return `data: ${JSON.stringify(payload)}\n\n`;
}
const usageChunk = `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'bench-model', choices: [], usage: { prompt_tokens: 12, completion_tokens: 10, total_tokens: 22 } })}\n\n`;
const fastStream = [chunk({ role: 'assistant', content: '' }, null), ...WORDS.map((w) => chunk({ content: w }, null)), chunk({}, 'stop'), usageChunk, 'data: [DONE]\n\n'].join('');

/** BENCH_FAIL_RATIO: the share of requests answered 500 (the flaky deployment of BENCH_DEPLOYMENTS=2). */
const FAIL_RATIO = Number(process.env.BENCH_FAIL_RATIO ?? 0);
const failure = JSON.stringify({ error: { message: 'bench upstream: induced failure', type: 'server_error', param: null, code: null } });

function handle(req: IncomingMessage, res: ServerResponse): void {
  const parts: Buffer[] = [];
  req.on('data', (c: Buffer) => parts.push(c));
  req.on('end', () => {
    if (FAIL_RATIO > 0 && Math.random() < FAIL_RATIO) {
      res.writeHead(500, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(failure) });
      res.end(failure);
      return;
    }
    const body = JSON.parse(Buffer.concat(parts).toString('utf8') || '{}') as { stream?: boolean; model?: string };
    if (!body.stream) {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(completion) });
      res.end(completion);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (body.model !== 'bench-slow') {
      res.end(fastStream);
      return;
    }
    let sent = 0;
    res.write(chunk({ role: 'assistant', content: '' }, null));
    const timer = setInterval(() => {
      if (++sent < SLOW_CHUNKS) {
        res.write(chunk({ content: ' word' }, null));
        return;
      }
      clearInterval(timer);
      res.end(chunk({}, 'stop') + usageChunk + 'data: [DONE]\n\n');
    }, SLOW_CHUNK_MS);
    res.on('close', () => clearInterval(timer));
  });
}

const server = createServer(handle);
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${typeof address === 'object' && address ? address.port : 0}\n`);
});

import { StatementBatcher } from './statement-batcher';

/** An execute function that records its calls and answers when told to. */
function recordingExecute(fail: (items: number[]) => boolean = () => false) {
  const calls: { items: number[]; finish(): void }[] = [];
  const execute = (items: number[]) =>
    new Promise<string[]>((resolve, reject) => {
      calls.push({ items, finish: () => (fail(items) ? reject(new Error(`bad batch ${items.join(',')}`)) : resolve(items.map((i) => `r${i}`))) });
    });
  return { calls, execute };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('StatementBatcher', () => {
  it('sends an item at once while calls are free, and queued items together in the next call', async () => {
    const { calls, execute } = recordingExecute();
    const batcher = new StatementBatcher(execute, 1, 100);
    const first = batcher.submit(1);
    const rest = [2, 3, 4].map((i) => batcher.submit(i));
    expect(calls.map((c) => c.items)).toEqual([[1]]);

    calls[0].finish();
    await expect(first).resolves.toBe('r1');
    await settle();
    expect(calls.map((c) => c.items)).toEqual([[1], [2, 3, 4]]);
    calls[1].finish();
    await expect(Promise.all(rest)).resolves.toEqual(['r2', 'r3', 'r4']);
  });

  it('caps a call at maxBatch items', async () => {
    const { calls, execute } = recordingExecute();
    const batcher = new StatementBatcher(execute, 1, 2);
    const all = [1, 2, 3, 4, 5].map((i) => batcher.submit(i));
    for (let n = 0; n < 3; n++) {
      await settle();
      calls[n].finish();
    }
    await expect(Promise.all(all)).resolves.toEqual(['r1', 'r2', 'r3', 'r4', 'r5']);
    expect(calls.map((c) => c.items)).toEqual([[1], [2, 3], [4, 5]]);
  });

  it('runs each item of a failed batch alone, so only the faulty one fails', async () => {
    const { calls, execute } = recordingExecute((items) => items.includes(3));
    const batcher = new StatementBatcher(execute, 1, 100);
    const first = batcher.submit(1);
    const rest = [2, 3, 4].map((i) => batcher.submit(i).catch((err: Error) => err.message));
    calls[0].finish();
    await first;
    await settle();
    calls[1].finish();
    await settle();
    expect(calls.slice(2).map((c) => c.items)).toEqual([[2], [3], [4]]);
    calls.slice(2).forEach((c) => c.finish());
    await expect(Promise.all(rest)).resolves.toEqual(['r2', 'bad batch 3', 'r4']);
  });

  it('lets an item linger for company up to lingerMs, and sends it with the others then', async () => {
    jest.useFakeTimers();
    try {
      const { calls, execute } = recordingExecute();
      const batcher = new StatementBatcher(execute, 1, 100, 10);
      const lingering = [1, 2].map((i) => batcher.submit(i, true));
      jest.advanceTimersByTime(9);
      expect(calls).toHaveLength(0);
      const third = batcher.submit(3, true);
      jest.advanceTimersByTime(1);
      expect(calls.map((c) => c.items)).toEqual([[1, 2, 3]]);
      calls[0].finish();
      await expect(Promise.all([...lingering, third])).resolves.toEqual(['r1', 'r2', 'r3']);
    } finally {
      jest.useRealTimers();
    }
  });

  it('sends lingering items at once with an item that does not linger, or on flush', async () => {
    jest.useFakeTimers();
    try {
      const { calls, execute } = recordingExecute();
      const batcher = new StatementBatcher(execute, 1, 100, 10);
      const first = batcher.submit(1, true);
      const urgent = batcher.submit(2);
      expect(calls.map((c) => c.items)).toEqual([[1, 2]]);
      calls[0].finish();
      await expect(Promise.all([first, urgent])).resolves.toEqual(['r1', 'r2']);

      const later = batcher.submit(3, true);
      expect(calls).toHaveLength(1);
      batcher.flush();
      expect(calls.map((c) => c.items)).toEqual([[1, 2], [3]]);
      calls[1].finish();
      await expect(later).resolves.toBe('r3');
      expect(jest.getTimerCount()).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });
});

import type { Writable } from 'node:stream';

/** Resolves once a response whose buffer is full may take more: at its 'drain', or at its 'close' (the client left). */
export function drained(res: Writable): Promise<void> {
  return new Promise<void>((resolve) => {
    const resume = () => {
      res.off('drain', resume);
      res.off('close', resume);
      resolve();
    };
    res.on('drain', resume);
    res.on('close', resume);
  });
}

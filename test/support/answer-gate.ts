/**
 * Holds a fake upstream's answers until the test lets them go: a test that needs a request to stay open at the
 * upstream while it does something else (a repeat of the request, every concurrent request decided) closes the
 * gate, and the fake waits at it after recording each request and before answering. No timing window: the
 * request stays open however loaded the machine is, until `release` (call it in a `finally`).
 */
export class AnswerGate {
  private opened: Promise<void> | null = null;

  /** Closes the gate: requests recorded from now on wait. Returns the release, which lets every waiting request through. */
  hold(): () => void {
    let release!: () => void;
    const opened = new Promise<void>((resolve) => (release = resolve));
    this.opened = opened;
    return () => {
      if (this.opened === opened) this.opened = null;
      release();
    };
  }

  /** Resolves at once when open, else when released. */
  passed(): Promise<void> {
    return this.opened ?? Promise.resolve();
  }
}

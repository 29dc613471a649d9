/* The e2e specs' test environment: Node's, and when a test fails, the seed of the fake upstream's random SSE
 * framing in that file (test/support/sse-framing.ts), so that `FAKE_SSE_SEED=<seed>` can replay it. */
const { TestEnvironment } = require('jest-environment-node');

class SeedReportingEnvironment extends TestEnvironment {
  async handleTestEvent(event) {
    const seed = this.global.__FAKE_SSE_SEED__;
    if (event.name === 'test_done' && event.test.errors.length > 0 && seed !== undefined) {
      process.stderr.write(`"${event.test.name}" failed; the fake upstream framed its SSE answers with FAKE_SSE_SEED=${seed}\n`);
    }
  }
}

module.exports = SeedReportingEnvironment;

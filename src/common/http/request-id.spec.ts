import { newRequestId } from './request-id';

describe('newRequestId', () => {
  it('gives req_ and 24 hex digits, never the same id twice, also across refills of its random pool', () => {
    const ids = Array.from({ length: 2000 }, () => newRequestId());
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-f]{24}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

import { Repository } from 'typeorm';
import { ApiKey } from './api-key.entity';
import { KEY_LOOKUP, KeyRow } from './cached-key';
import { generateApiKey, hashApiKey } from './key-format';
import { KeysService } from './keys.service';

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe(KeysService.name, () => {
  const key = generateApiKey();
  const row = { id: 'key-1', accountId: 'acc-1', keyHash: hashApiKey(key), revokedAt: null } as ApiKey;
  const lookedUp = { id: 'key-1', account_id: 'acc-1', budget_id: 'key-1', monthly_limit_micros: null, expires_at: null, models: null, rpm: null, tpm: 5, account_rpm: 7, account_tpm: null } as KeyRow;
  let repo: { findOne: jest.Mock; query: jest.Mock; findOneByOrFail: jest.Mock };
  let sut: KeysService;

  /** The look-ups (KEY_LOOKUP) answered by `findOne` (a row or null), every other statement by `others`. */
  function answerQueries(others: (sql: string) => unknown = () => []): void {
    repo.query.mockImplementation(async (sql: string, params: unknown[]) => {
      if (sql !== KEY_LOOKUP) return others(sql);
      const found = await repo.findOne(params);
      return found ? [found] : [];
    });
  }

  beforeEach(() => {
    repo = { findOne: jest.fn(), query: jest.fn(), findOneByOrFail: jest.fn() };
    answerQueries();
    // The LISTEN connection (onModuleInit) is not opened: revocation notices are exercised through revoke().
    sut = new KeysService(repo as unknown as Repository<ApiKey>, 'postgres://unused');
  });

  it('refuses a malformed key without a look-up', async () => {
    // A different last character breaks the checksum (a random key may already end in x).
    const badChecksum = `${key.slice(0, -1)}${key.endsWith('x') ? 'y' : 'x'}`;
    await expect(sut.authenticate(badChecksum)).resolves.toBeNull();
    await expect(sut.authenticate('sk-not-ours')).resolves.toBeNull();
    expect(repo.findOne).not.toHaveBeenCalled();
  });

  it('looks a key up by its SHA-256 once, then serves it from the cache', async () => {
    repo.findOne.mockResolvedValue(lookedUp);
    await expect(sut.authenticate(key)).resolves.toMatchObject({ accountId: 'acc-1', keyId: 'key-1', rateLimits: { key: { rpm: null, tpm: 5 }, account: { rpm: 7, tpm: null } } });
    await expect(sut.authenticate(key)).resolves.toMatchObject({ accountId: 'acc-1', keyId: 'key-1' });
    expect(repo.findOne).toHaveBeenCalledTimes(1);
    expect(JSON.stringify(repo.findOne.mock.calls[0])).toContain(hashApiKey(key));
    expect(JSON.stringify(repo.findOne.mock.calls[0])).not.toContain(key);
  });

  it('does not cache a look-up that was under way when the key was revoked', async () => {
    const lookup = deferred<KeyRow | null>();
    repo.findOne.mockReturnValueOnce(lookup.promise).mockResolvedValue(null);
    answerQueries((sql) => (sql.startsWith('UPDATE') ? [[{ key_hash: row.keyHash }], 1] : []));
    repo.findOneByOrFail.mockResolvedValue({ ...row, revokedAt: new Date() });

    const racing = sut.authenticate(key);
    await sut.revoke('key-1');
    lookup.resolve(lookedUp); // the row as it was read before the revocation committed
    await expect(racing).resolves.toMatchObject({ keyId: 'key-1' });

    await expect(sut.authenticate(key)).resolves.toBeNull();
    expect(repo.findOne).toHaveBeenCalledTimes(2);
  });

  it('drops a cached key when it is revoked and tells the other replicas', async () => {
    repo.findOne.mockResolvedValueOnce(lookedUp).mockResolvedValue(null);
    answerQueries((sql) => (sql.startsWith('UPDATE') ? [[{ key_hash: row.keyHash }], 1] : []));
    repo.findOneByOrFail.mockResolvedValue({ ...row, revokedAt: new Date() });
    await sut.authenticate(key);

    await sut.revoke('key-1');
    expect(repo.query).toHaveBeenCalledWith('SELECT pg_notify($1, $2)', ['api_key_revoked', row.keyHash]);
    await expect(sut.authenticate(key)).resolves.toBeNull();
  });

  it('answers null when revoking an unknown key', async () => {
    repo.query.mockResolvedValue([[], 0]);
    await expect(sut.revoke('nope')).resolves.toBeNull();
    expect(repo.query).toHaveBeenCalledTimes(1);
  });
});

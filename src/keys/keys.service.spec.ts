import { Repository } from 'typeorm';
import { ApiKey } from './api-key.entity';
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
  let repo: { findOne: jest.Mock; query: jest.Mock; findOneByOrFail: jest.Mock };
  let sut: KeysService;

  beforeEach(() => {
    repo = { findOne: jest.fn(), query: jest.fn(), findOneByOrFail: jest.fn() };
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
    repo.findOne.mockResolvedValue(row);
    await expect(sut.authenticate(key)).resolves.toMatchObject({ accountId: 'acc-1', keyId: 'key-1' });
    await expect(sut.authenticate(key)).resolves.toMatchObject({ accountId: 'acc-1', keyId: 'key-1' });
    expect(repo.findOne).toHaveBeenCalledTimes(1);
    expect(JSON.stringify(repo.findOne.mock.calls[0])).toContain(hashApiKey(key));
    expect(JSON.stringify(repo.findOne.mock.calls[0])).not.toContain(key);
  });

  it('does not cache a look-up that was under way when the key was revoked', async () => {
    const lookup = deferred<ApiKey | null>();
    repo.findOne.mockReturnValueOnce(lookup.promise).mockResolvedValue(null);
    repo.query.mockImplementation(async (sql: string) => (sql.startsWith('UPDATE') ? [[{ key_hash: row.keyHash }], 1] : []));
    repo.findOneByOrFail.mockResolvedValue({ ...row, revokedAt: new Date() });

    const racing = sut.authenticate(key);
    await sut.revoke('key-1');
    lookup.resolve(row); // the row as it was read before the revocation committed
    await expect(racing).resolves.toMatchObject({ keyId: 'key-1' });

    await expect(sut.authenticate(key)).resolves.toBeNull();
    expect(repo.findOne).toHaveBeenCalledTimes(2);
  });

  it('drops a cached key when it is revoked and tells the other replicas', async () => {
    repo.findOne.mockResolvedValueOnce(row).mockResolvedValue(null);
    repo.query.mockImplementation(async (sql: string) => (sql.startsWith('UPDATE') ? [[{ key_hash: row.keyHash }], 1] : []));
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

import { ArgumentMetadata } from '@nestjs/common';
import { IsString } from 'class-validator';
import { ErrorCode } from '../../errors';
import { StrictValidationPipe } from './strict-validation.pipe';

class NameDto {
  @IsString() name: string;
}

class UsageMeterLike {
  close(): void {}
}

describe(StrictValidationPipe.name, () => {
  const sut = new StrictValidationPipe();
  const body = (metatype: ArgumentMetadata['metatype']): ArgumentMetadata => ({ type: 'body', metatype });

  it('passes a parameter that is not a class-validator DTO through untouched, whatever its shape', async () => {
    const chatBody = { model: 'm', messages: [], extra: { deep: [1, 2] } };
    await expect(sut.transform(chatBody, body(Object))).resolves.toBe(chatBody);
    await expect(sut.transform([1, 2], body(Object))).resolves.toEqual([1, 2]);
    await expect(sut.transform('text', body(undefined))).resolves.toBe('text');
    await expect(sut.transform(null, { type: 'custom', metatype: UsageMeterLike })).resolves.toBeNull();
    await expect(sut.transform('c0ffee', { type: 'param', metatype: String, data: 'id' })).resolves.toBe('c0ffee');
  });

  it('refuses a DTO body that is not a JSON object, and fields the DTO does not declare', async () => {
    for (const value of [null, [], 'name', 7]) {
      expect(() => sut.transform(value, body(NameDto))).toThrow(expect.objectContaining({ code: ErrorCode.InvalidRequest, message: 'The request body must be a JSON object.' }));
    }
    expect(() => sut.transform({ name: 'a', constructor: 1 }, body(NameDto))).toThrow(expect.objectContaining({ code: ErrorCode.InvalidRequest, param: 'constructor' }));
  });

  it('validates a DTO body and names the field at fault', async () => {
    await expect(sut.transform({ name: 'a' }, body(NameDto))).resolves.toMatchObject({ name: 'a' });
    await expect(sut.transform({ name: 5 }, body(NameDto))).rejects.toMatchObject({ code: ErrorCode.InvalidRequest, param: 'name' });
  });
});

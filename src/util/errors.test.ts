import { describe, expect, it } from 'vitest';
import { MemWalError, errorFromWire, errorToWire, quotaExceededError } from './errors.js';

describe('the error wire (errorToWire / errorFromWire)', () => {
  it('a MemWalError crosses with its code and message', () => {
    const back = errorFromWire(structuredClone(errorToWire(new MemWalError('Fenced', 'epoch 3 is fenced by epoch 4'), 'commit')));
    expect(back).toBeInstanceOf(MemWalError);
    expect(back.code).toBe('Fenced');
    expect(back.message).toBe('epoch 3 is fenced by epoch 4');
  });

  it('any other thrown value is mapped once, on the sending side, with its context', () => {
    const w = errorToWire(quotaExceededError('disk full'), 'table write');
    expect(w).toEqual({ code: 'QuotaExceeded', message: 'table write: QuotaExceededError: disk full' });
    expect(errorFromWire(w).code).toBe('QuotaExceeded');
  });

  it('a code this build does not know arrives as IOError, message kept', () => {
    const e = errorFromWire({ code: 'SomethingNew', message: 'from a newer build' });
    expect(e.code).toBe('IOError');
    expect(e.message).toBe('from a newer build');
  });
});

/**
 * A value handed over once: the holder lets go of it when it is taken, so whoever keeps the holder (a run that waits
 * for minutes, an HTTP client that keeps a request's body until the answer ends) no longer keeps the value.
 */
export class HandOver<T> {
  constructor(private value: T | undefined) {}

  /** The value the first time; undefined after that. */
  take(): T | undefined {
    const value = this.value;
    this.value = undefined;
    return value;
  }
}

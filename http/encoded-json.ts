/**
 * A response body already encoded as JSON (UTF-8), sent as it is. `T` is the value it decodes to,
 * so a handler returning one is still checked against the body its operation declares.
 */
export class EncodedJson<T> {
  declare readonly decodesTo: T;

  constructor(readonly bytes: Buffer) {}

  /** `{"<key>": <value>}`, the value already encoded. */
  static member<T>(key: keyof T & string, value: Buffer): EncodedJson<T> {
    return new EncodedJson<T>(Buffer.concat([Buffer.from(`{${JSON.stringify(key)}:`), value, CLOSE_BRACE]));
  }
}

const CLOSE_BRACE = Buffer.from('}');

/**
 * A response body already encoded as JSON (UTF-8), sent as it is. `T` is the value it decodes to,
 * so a handler returning one is still checked against the body its operation declares.
 */
export class EncodedJson<T> {
  declare readonly decodesTo: T;

  constructor(readonly bytes: Buffer) {}

  /** `{"<key>": <value>, ...rest}`, the value already encoded; `rest` (small) encoded here. */
  static member<T>(key: keyof T & string, value: Buffer, rest?: NoInfer<Partial<T>>): EncodedJson<T> {
    const more = rest && Object.keys(rest).length ? `,${JSON.stringify(rest).slice(1, -1)}` : '';
    return new EncodedJson<T>(
      Buffer.concat([Buffer.from(`{${JSON.stringify(key)}:`), value, Buffer.from(`${more}}`)]),
    );
  }
}

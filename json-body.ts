import { isUtf8 } from 'node:buffer';
import type { FastifyRequest } from 'fastify';
import { errors } from './errors.js';
import { jsonNestsDeeperThan, MAX_JSON_DEPTH } from './json-depth.js';
import { mayHoldOutOfRangeNumber, nonFiniteNumberAt } from './json-numbers.js';

type Done = (err: Error | null, body?: unknown) => void;
/** Fastify's own JSON parser (secure-json-parse: `__proto__` and `constructor` keys refused). */
export type ParseJson = (request: FastifyRequest, text: string, done: Done) => void;

/**
 * The application/json body parser. It refuses what parsing would hide or could not survive:
 * bytes that are not UTF-8 (decoding would store U+FFFD instead), nesting deeper than
 * MAX_JSON_DEPTH (checked on the text, before anything recursive sees it), and numbers beyond a
 * double (parsed as Infinity, stored as null). An empty body is no body.
 */
export function jsonBodyParser(parseJson: ParseJson) {
  return (request: FastifyRequest, raw: Buffer, done: Done) => {
    if (!isUtf8(raw)) return done(errors.invalidJson('it is not valid UTF-8'), undefined);
    const text = raw.toString('utf8');
    if (text === '') return done(null, undefined);
    if (jsonNestsDeeperThan(text, MAX_JSON_DEPTH)) {
      return done(
        errors.validation([{ in: 'body', path: '', message: `nests deeper than ${MAX_JSON_DEPTH} levels` }]),
        undefined,
      );
    }
    parseJson(request, text, (err, value) => {
      const outOfRange = !err && mayHoldOutOfRangeNumber(text) ? nonFiniteNumberAt(value) : undefined;
      if (outOfRange === undefined) return done(err, value);
      const message = 'is a number beyond the range of a double (such as 1e999)';
      done(errors.validation([{ in: 'body', path: outOfRange, message }]), undefined);
    });
  };
}

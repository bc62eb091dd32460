import { isUtf8 } from 'node:buffer';
import type { FastifyRequest } from 'fastify';
import { errors } from '../errors.js';
import { MAX_JSON_DEPTH, scanJsonText } from './json-depth.js';
import { mayHoldUnsafeNumber, type UnsafeNumber, unsafeNumberAt } from './json-numbers.js';

function unsafeNumberMessage(reason: UnsafeNumber, stored: string): string {
  return reason === 'range'
    ? 'is a number beyond the range of a double (such as 1e999)'
    : `is an integer that a double cannot hold: it would be stored as ${stored}; send it as a string`;
}

/** The request body limit when BODY_LIMIT is not set; the README and openapi.yaml promise it. */
export const DEFAULT_BODY_LIMIT = 16 * 1024 * 1024;

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The body's JSON text when storing it as sent stores what storing the parsed body would (its
     * numbers are spelled as JSON.stringify spells them; json-depth.ts), else undefined.
     */
    verbatimBody: string | undefined;
  }
}

type Done = (err: Error | null, body?: unknown) => void;
/** Fastify's own JSON parser (secure-json-parse: `__proto__` and `constructor` keys refused). */
export type ParseJson = (request: FastifyRequest, text: string, done: Done) => void;

/**
 * The application/json body parser. It refuses what parsing would hide or could not survive:
 * bytes that are not UTF-8 (decoding would store U+FFFD instead), nesting deeper than
 * MAX_JSON_DEPTH (checked on the text, before anything recursive sees it), and numbers that a
 * double would change (json-numbers.ts). An empty body is no body.
 */
export function jsonBodyParser(parseJson: ParseJson) {
  return (request: FastifyRequest, raw: Buffer, done: Done) => {
    if (!isUtf8(raw)) return done(errors.invalidJson('it is not valid UTF-8'), undefined);
    const text = raw.toString('utf8');
    if (text === '') return done(null, undefined);
    const scan = scanJsonText(text, MAX_JSON_DEPTH);
    if (scan.tooDeep) {
      return done(
        errors.validation([{ in: 'body', path: '', message: `nests deeper than ${MAX_JSON_DEPTH} levels` }]),
        undefined,
      );
    }
    parseJson(request, text, (err, value) => {
      if (err) return done(err, value);
      // Numbers spelled as a double writes them are neither out of range nor unsafe integers.
      if (scan.numbersAsWritten) {
        request.verbatimBody = text;
        return done(null, value);
      }
      const unsafe = mayHoldUnsafeNumber(text) ? unsafeNumberAt(text) : undefined;
      if (unsafe === undefined) return done(null, value);
      const message = unsafeNumberMessage(unsafe.reason, unsafe.stored);
      done(errors.validation([{ in: 'body', path: unsafe.pointer, message }]), undefined);
    });
  };
}

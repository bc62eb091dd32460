import { QueryError } from '../../errors.js';
import { describeValue, getOwn, isPlainObject, type Json } from '../value/json.js';

/**
 * The expression operators' operand forms, as MongoDB parses them: each turns the operand into
 * its arguments (parsed expressions, in the order expr/sql.ts and expr/evaluate.ts read them).
 * An operator's operand is an array of arguments, or one argument that is not an array.
 */

/** A parsed expression, as expr/parse.ts makes it; kept abstract here so this module needs no cycle. */
type ParseArg<E> = (raw: unknown) => E;
type OperandParser = <E>(operand: Json, where: string, parseArg: ParseArg<E>, op: string) => E[];

function argumentList(operand: Json): Json[] {
  return Array.isArray(operand) ? operand : [operand];
}

/** MongoDB's arity messages ("Expression $subtract takes exactly 2 arguments. 1 were passed in."). */
function arity(min: number, max = min): OperandParser {
  return (operand, where, parseArg, op) => {
    const list = argumentList(operand);
    if (list.length < min || list.length > max)
      throw new QueryError(
        min === max
          ? `Expression ${op} takes exactly ${min} arguments. ${list.length} were passed in (in ${where}).`
          : max === Number.POSITIVE_INFINITY
            ? `Expression ${op} takes at least ${min} arguments, but ${list.length} were passed in (in ${where}).`
            : `Expression ${op} takes at least ${min} arguments, and at most ${max}, but ${list.length} were passed in (in ${where}).`,
      );
    return list.map(parseArg);
  };
}

const variadic = arity(0, Number.POSITIVE_INFINITY);

/** `{$cond: [if, then, else]}` or `{$cond: {if, then, else}}`. */
const parseCond: OperandParser = (operand, where, parseArg, op) => {
  if (!isPlainObject(operand)) return arity(3)(operand, where, parseArg, op);
  for (const key of Object.keys(operand))
    if (!['if', 'then', 'else'].includes(key))
      throw new QueryError(`Unrecognized parameter to $cond: ${key} (in ${where}).`);
  return ['if', 'then', 'else'].map((key) => {
    const value = getOwn(operand, key);
    if (value === undefined) throw new QueryError(`Missing '${key}' parameter to $cond (in ${where}).`);
    return parseArg(value);
  });
};

const parseIfNull: OperandParser = (operand, where, parseArg) => {
  const list = argumentList(operand);
  if (list.length < 2)
    throw new QueryError(`$ifNull needs at least two arguments, had: ${list.length} (in ${where}).`);
  return list.map(parseArg);
};

/** `{branches: [{case, then}, …], default}`: case and then of each branch in turn, then the default if any. */
const parseSwitch: OperandParser = (operand, where, parseArg) => {
  if (!isPlainObject(operand))
    throw new QueryError(`$switch expects an object, found: ${describeValue(operand)} (in ${where}).`);
  const args = [];
  for (const key of Object.keys(operand))
    if (key !== 'branches' && key !== 'default')
      throw new QueryError(`$switch found an unknown argument: ${key} (in ${where}).`);
  const branches = getOwn(operand, 'branches');
  if (!Array.isArray(branches))
    throw new QueryError(
      `$switch expected an array for 'branches', found: ${describeValue(branches ?? null)} (in ${where}).`,
    );
  if (branches.length === 0) throw new QueryError(`$switch requires at least one branch (in ${where}).`);
  for (const branch of branches) {
    if (!isPlainObject(branch))
      throw new QueryError(
        `$switch expected each branch to be an object, found: ${describeValue(branch)} (in ${where}).`,
      );
    for (const key of Object.keys(branch))
      if (key !== 'case' && key !== 'then')
        throw new QueryError(`$switch found an unknown argument to a branch: ${key} (in ${where}).`);
    for (const key of ['case', 'then']) {
      const value = getOwn(branch, key);
      if (value === undefined)
        throw new QueryError(`$switch requires each branch have a '${key}' expression (in ${where}).`);
      args.push(parseArg(value));
    }
  }
  const otherwise = getOwn(operand, 'default');
  if (otherwise !== undefined) args.push(parseArg(otherwise));
  return args;
};

/** `{input, chars}`: input, then chars if given. */
const parseTrim: OperandParser = (operand, where, parseArg, op) => {
  if (!isPlainObject(operand))
    throw new QueryError(
      `${op} requires an object as an argument, found: ${describeValue(operand)} (in ${where}).`,
    );
  for (const key of Object.keys(operand))
    if (key !== 'input' && key !== 'chars')
      throw new QueryError(`${op} found an unknown argument: ${key} (in ${where}).`);
  const input = getOwn(operand, 'input');
  if (input === undefined) throw new QueryError(`${op} requires an 'input' field (in ${where}).`);
  const chars = getOwn(operand, 'chars');
  return chars === undefined ? [parseArg(input)] : [parseArg(input), parseArg(chars)];
};

/** Every operator but `$literal` (expr/parse.ts), with its operand form. */
export const EXPRESSION_OPERATORS: ReadonlyMap<string, OperandParser> = new Map<string, OperandParser>([
  ['$add', variadic],
  ['$subtract', arity(2)],
  ['$multiply', variadic],
  ['$divide', arity(2)],
  ['$mod', arity(2)],
  ['$abs', arity(1)],
  ['$ceil', arity(1)],
  ['$floor', arity(1)],
  ['$round', arity(1, 2)],
  ['$trunc', arity(1, 2)],
  ['$sqrt', arity(1)],
  ['$pow', arity(2)],
  ['$exp', arity(1)],
  ['$ln', arity(1)],
  ['$log10', arity(1)],
  ['$eq', arity(2)],
  ['$ne', arity(2)],
  ['$gt', arity(2)],
  ['$gte', arity(2)],
  ['$lt', arity(2)],
  ['$lte', arity(2)],
  ['$cmp', arity(2)],
  ['$and', variadic],
  ['$or', variadic],
  ['$not', arity(1)],
  ['$cond', parseCond],
  ['$ifNull', parseIfNull],
  ['$switch', parseSwitch],
  ['$concat', variadic],
  ['$toLower', arity(1)],
  ['$toUpper', arity(1)],
  ['$substrCP', arity(3)],
  ['$strLenCP', arity(1)],
  ['$trim', parseTrim],
  ['$ltrim', parseTrim],
  ['$rtrim', parseTrim],
  ['$split', arity(2)],
  ['$indexOfCP', arity(2, 4)],
  ['$size', arity(1)],
  ['$arrayElemAt', arity(2)],
  ['$in', arity(2)],
  ['$isArray', arity(1)],
  ['$concatArrays', variadic],
  ['$type', arity(1)],
]);

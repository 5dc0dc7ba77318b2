import test from 'ava';
import { Ajv } from 'ajv';
import { settingsValidator } from '../../host/connectors/settings-schema.ts';
import { checkSettingsSchema } from '../../host/plugins/checks.ts';
import type { PluginManifest } from '../../host/plugins/contract.ts';

/** Counts ajv compilations while `run` goes. */
function compilations(run: () => void): number {
  const compile = Ajv.prototype.compile;
  let n = 0;
  Ajv.prototype.compile = function (this: Ajv, ...args: Parameters<Ajv['compile']>) {
    n++;
    return compile.apply(this, args);
  } as Ajv['compile'];
  try {
    run();
  } finally {
    Ajv.prototype.compile = compile;
  }
  return n;
}

// A schema of its own (a property name no other test uses), so that no earlier compile in this process counts.
const schema = () => ({
  type: 'object',
  properties: { compile_once_url: { type: 'string', format: 'uri' }, port: { type: 'integer', minimum: 1 } },
  required: ['compile_once_url'],
  additionalProperties: false,
});

test('a settings schema is compiled once per process: apps built from the same plugins share the validator, which still names the bad field', (t) => {
  let first!: (v: unknown) => string | null;
  let second!: (v: unknown) => string | null;
  const n = compilations(() => {
    first = settingsValidator(schema());
    second = settingsValidator(schema(), 'params');
  });
  t.is(n, 1);
  t.is(first({ compile_once_url: 'https://prom.example/' }), null);
  t.is(first({ compile_once_url: 'https://prom.example/', port: 0 }), 'settings.port must be >= 1');
  t.is(second({ compile_once_url: 'https://prom.example/', extra: 1 }), 'params: unknown field extra', 'each keeps its own root in messages');
  t.is(first({}), 'settings.compile_once_url is required');
});

test("a connector manifest's schemas are checked once per process, and a bad one is refused every time with the same reason", (t) => {
  const manifest = (settings: object): PluginManifest =>
    ({
      settings,
      reads: { probe: { request: { type: 'object', properties: { compile_once_q: { type: ['string', 'null'] } } } } },
    }) as unknown as PluginManifest;
  const n = compilations(() => {
    checkSettingsSchema(manifest(schema()));
    checkSettingsSchema(manifest(schema()));
  });
  t.is(n, 2, 'the settings and the one read request, each once');
  const bad = { type: 'object', properties: { compile_once_bad: { type: 'strng' } } };
  const refused = () => t.throws(() => checkSettingsSchema(manifest(bad)), { message: /^settings is not a usable JSON Schema \(/ })!.message;
  t.is(refused(), refused());
});

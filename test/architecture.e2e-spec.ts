import { Type } from '@nestjs/common';
import { GLOBAL_MODULE_METADATA } from '@nestjs/common/constants';
import { ModulesContainer } from '@nestjs/core';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { commonPartOrTopFolder, describeCycle, folderCycles, folderGraph, importEdges, sourceFiles, topFolder } from './support/import-graph';
import { startTestApp, TestApp } from './support/test-app';

const SRC = join(__dirname, '../src');

/** Shared configuration and infrastructure that every module reads (docs/architecture.md, "Module graph"). */
const SHARED_GLOBAL_MODULES = ['ConfigModule', 'LoggingModule'];

function isClass(value: unknown): boolean {
  return typeof value === 'function' && Function.prototype.toString.call(value).startsWith('class ');
}

/** Every class exported by a src/**\/*.module.ts file, by name, with the file it comes from. */
function sourceModules(): { name: string; file: string; moduleClass: Type }[] {
  return sourceFiles(SRC)
    .filter((file) => file.endsWith('.module.ts'))
    .flatMap((file) =>
      Object.entries(require(join(SRC, file)) as Record<string, unknown>)
        .filter((entry): entry is [string, Type] => isClass(entry[1]) && entry[0].endsWith('Module'))
        .map(([name, moduleClass]) => ({ name, file, moduleClass })),
    );
}

describe('Module graph', () => {
  const modules = sourceModules();

  it('has no @Global() feature module: only the shared configuration and logging modules are global', () => {
    const global = modules.filter((m) => Reflect.getMetadata(GLOBAL_MODULE_METADATA, m.moduleClass) === true).map((m) => m.name);
    expect(global).toContain('ConfigModule'); // the check sees a decorated module
    expect(global.filter((name) => !SHARED_GLOBAL_MODULES.includes(name))).toEqual([]);
  });

  it('has no dynamic module made global with `global: true`', () => {
    const dynamicGlobal = modules.filter((m) => /\bglobal\s*:\s*true\b/.test(readFileSync(join(SRC, m.file), 'utf8'))).map((m) => m.file);
    expect(dynamicGlobal).toEqual([]);
  });

  describe('in the running app', () => {
    let gw: TestApp;

    beforeAll(async () => {
      gw = await startTestApp();
    });
    afterAll(() => gw.close());

    const loaded = () => [...gw.app.get(ModulesContainer).values()];

    it('reaches every module of src/ through declared imports', () => {
      const reached = new Set(loaded().map((moduleRef) => moduleRef.metatype));
      expect(modules.filter((m) => !reached.has(m.moduleClass)).map((m) => m.name)).toEqual([]);
    });

    it('holds no global module of src/ beyond the shared ones', () => {
      const ours = new Set(modules.map((m) => m.moduleClass));
      const global = loaded().filter((moduleRef) => moduleRef.isGlobal && ours.has(moduleRef.metatype as Type));
      expect(global.map((moduleRef) => moduleRef.metatype.name).sort()).toEqual([...SHARED_GLOBAL_MODULES].sort());
    });
  });
});

describe('Folder graph of src/', () => {
  const edges = importEdges(SRC);
  const topFolders = folderGraph(edges, topFolder);
  const commonParts = folderGraph(edges, commonPartOrTopFolder);

  it('reads the imports of the sources (chat uses billing, billing uses errors and common/database)', () => {
    expect([...(topFolders.get('chat')?.keys() ?? [])]).toContain('billing');
    expect([...(topFolders.get('billing')?.keys() ?? [])]).toContain('errors');
    expect([...(commonParts.get('billing')?.keys() ?? [])]).toContain('common/database');
  });

  it('has no two top-level folders that import each other, directly or through a longer cycle', () => {
    expect(folderCycles(topFolders).map((cycle) => describeCycle(topFolders, cycle))).toEqual([]);
  });

  it('has no two sub-folders of common/ that import each other', () => {
    expect(folderCycles(commonParts).map((cycle) => describeCycle(commonParts, cycle))).toEqual([]);
  });

  it('would report a cycle: the same graph with an arrow back from usage to chat shows chat ⇄ usage', () => {
    const planted = new Map([...topFolders].map(([folder, targets]) => [folder, new Map(targets)]));
    planted.get('usage')!.set('chat', [{ from: 'usage/planted.ts', to: 'chat/chat.service.ts' }]);
    expect(folderCycles(planted)).toContainEqual(expect.arrayContaining(['chat', 'usage']));
  });
});

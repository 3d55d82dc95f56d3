// The two modules the sink talks to LanceDB through, loaded once. LanceDB checks `instanceof`
// against the CommonJS build of apache-arrow it resolves itself, so every Arrow object handed to it
// is made by that module instance (loaded through createRequire from LanceDB's own path);
// memwal's Arrow (ESM) reaches it only as IPC bytes (docs/scale-out.md "Installing"). Node only.

import { createRequire } from 'node:module';
import type * as ArrowModule from 'apache-arrow';
import type * as LanceModule from '@lancedb/lancedb';

const requireHere = createRequire(import.meta.url);
/** `@lancedb/lancedb`. */
export const lancedb = requireHere('@lancedb/lancedb') as typeof LanceModule;
/** The apache-arrow module instance LanceDB itself uses (its CommonJS build). */
export const arrow = createRequire(requireHere.resolve('@lancedb/lancedb'))('apache-arrow') as typeof ArrowModule;

export type ArrowTable = ArrowModule.Table;
export type ArrowRecordBatch = ArrowModule.RecordBatch;
export type ArrowSchema = ArrowModule.Schema;
export type ArrowField = ArrowModule.Field;
export type ArrowData = ArrowModule.Data;
export type ArrowType = ArrowModule.DataType;

// Types of the `shmetrics` npm package: prom-client 15's API, so that
// TypeScript code written for prom-client compiles unchanged after
// `'prom-client'` becomes `'shmetrics'`, plus what shmetrics adds
// (ShmetricsError, useStore).

export type PrometheusContentType = 'text/plain; version=0.0.4; charset=utf-8';
export type OpenMetricsContentType = 'application/openmetrics-text; version=1.0.0; charset=utf-8';
export type RegistryContentType = PrometheusContentType | OpenMetricsContentType;

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary';
export type Aggregator = 'omit' | 'sum' | 'first' | 'min' | 'max' | 'average';

/** Label values by label name; a label left out is written as absent. */
export type LabelValues<T extends string> = Partial<Record<T, string | number>>;

export interface MetricValue<T extends string> {
	value: number;
	labels: LabelValues<T>;
}

export interface MetricValueWithName<T extends string> extends MetricValue<T> {
	metricName?: string;
}

export interface MetricObject {
	name: string;
	help: string;
	type: MetricType;
	aggregator: Aggregator;
}

export interface MetricObjectWithValues<T extends MetricValue<string>> extends MetricObject {
	values: T[];
}

export interface Metric<T extends string = string> {
	name: string;
	help: string;
	type: MetricType;
	aggregator: Aggregator;
	get(): Promise<MetricObjectWithValues<MetricValue<T>> | MetricObjectWithValues<MetricValueWithName<T>>>;
	reset(): void;
}

export type CollectFunction<T> = (this: T) => void | Promise<void>;

export interface MetricConfiguration<T extends string> {
	name: string;
	help: string;
	labelNames?: readonly T[];
	registers?: Registry[];
	aggregator?: Aggregator;
	collect?: CollectFunction<any>;
	enableExemplars?: boolean;
}

export interface IncreaseDataWithExemplar<T extends string> {
	value?: number;
	labels?: LabelValues<T>;
	exemplarLabels?: LabelValues<T>;
}

export interface ObserveDataWithExemplar<T extends string> {
	value: number;
	labels?: LabelValues<T>;
	exemplarLabels?: LabelValues<T>;
}

export class Registry<BoundRegistryContentType extends RegistryContentType = PrometheusContentType> {
	static readonly PROMETHEUS_CONTENT_TYPE: PrometheusContentType;
	static readonly OPENMETRICS_CONTENT_TYPE: OpenMetricsContentType;
	static merge(registers: Registry[]): Registry;
	constructor(regContentType?: BoundRegistryContentType);
	/** The page of this registry's metrics (the host's values). */
	metrics(): Promise<string>;
	clear(): void;
	resetMetrics(): void;
	registerMetric<T extends string>(metric: Metric<T>): void;
	getMetricsAsJSON(): Promise<MetricObjectWithValues<MetricValue<string>>[]>;
	getMetricsAsArray(): MetricObject[];
	removeSingleMetric(name: string): void;
	getSingleMetric<T extends string>(name: string): Metric<T> | undefined;
	setDefaultLabels(labels: object): void;
	getSingleMetricAsString(name: string): Promise<string>;
	readonly contentType: BoundRegistryContentType;
	setContentType(contentType: BoundRegistryContentType): void;
}

export const register: Registry;
export let contentType: RegistryContentType;
export const prometheusContentType: PrometheusContentType;
export const openMetricsContentType: OpenMetricsContentType;

/**
 * prom-client's cluster registry. clusterMetrics() reads the store: every
 * worker's metrics are there, with no IPC.
 */
export class AggregatorRegistry<T extends RegistryContentType = PrometheusContentType> extends Registry<T> {
	clusterMetrics(): Promise<string>;
	static aggregate<T extends RegistryContentType>(metricsArr: Array<object>, registryType?: T): Registry<T>;
	static setRegistries(regs: Array<Registry> | Registry): void;
}

export interface CounterConfiguration<T extends string> extends MetricConfiguration<T> {
	collect?: CollectFunction<Counter<T>>;
}

export class Counter<T extends string = string> {
	name: string;
	help: string;
	type: 'counter';
	aggregator: Aggregator;
	labelNames: readonly T[];
	constructor(configuration: CounterConfiguration<T>);
	inc(labels: LabelValues<T>, value?: number): void;
	inc(value?: number): void;
	inc(incData: IncreaseDataWithExemplar<T>): void;
	get(): Promise<MetricObjectWithValues<MetricValue<T>>>;
	labels(...values: string[]): Counter.Internal;
	labels(labels: LabelValues<T>): Counter.Internal;
	reset(): void;
	remove(...values: string[]): void;
	remove(labels: LabelValues<T>): void;
}

export namespace Counter {
	interface Internal {
		inc(value?: number): void;
	}
}

export interface GaugeConfiguration<T extends string> extends MetricConfiguration<T> {
	collect?: CollectFunction<Gauge<T>>;
}

export class Gauge<T extends string = string> {
	name: string;
	help: string;
	type: 'gauge';
	aggregator: Aggregator;
	labelNames: readonly T[];
	constructor(configuration: GaugeConfiguration<T>);
	inc(labels: LabelValues<T>, value?: number): void;
	inc(value?: number): void;
	dec(labels: LabelValues<T>, value?: number): void;
	dec(value?: number): void;
	set(labels: LabelValues<T>, value: number): void;
	set(value: number): void;
	setToCurrentTime(labels?: LabelValues<T>): void;
	startTimer(labels?: LabelValues<T>): (labels?: LabelValues<T>) => number;
	get(): Promise<MetricObjectWithValues<MetricValue<T>>>;
	labels(...values: string[]): Gauge.Internal<T>;
	labels(labels: LabelValues<T>): Gauge.Internal<T>;
	reset(): void;
	remove(...values: string[]): void;
	remove(labels: LabelValues<T>): void;
}

export namespace Gauge {
	interface Internal<T extends string> {
		inc(value?: number): void;
		dec(value?: number): void;
		set(value: number): void;
		setToCurrentTime(): void;
		startTimer(): (labels?: LabelValues<T>) => number;
	}
}

export interface HistogramConfiguration<T extends string> extends MetricConfiguration<T> {
	buckets?: number[];
	collect?: CollectFunction<Histogram<T>>;
}

export class Histogram<T extends string = string> {
	name: string;
	help: string;
	type: 'histogram';
	aggregator: Aggregator;
	labelNames: readonly T[];
	constructor(configuration: HistogramConfiguration<T>);
	observe(value: number): void;
	observe(labels: LabelValues<T>, value: number): void;
	observe(observeData: ObserveDataWithExemplar<T>): void;
	get(): Promise<MetricObjectWithValues<MetricValueWithName<T>>>;
	startTimer(labels?: LabelValues<T>, exemplarLabels?: LabelValues<T>): (labels?: LabelValues<T>, exemplarLabels?: LabelValues<T>) => number;
	reset(): void;
	zero(labels: LabelValues<T>): void;
	labels(...values: string[]): Histogram.Internal<T>;
	labels(labels: LabelValues<T>): Histogram.Internal<T>;
	remove(...values: string[]): void;
	remove(labels: LabelValues<T>): void;
}

export namespace Histogram {
	interface Internal<T extends string> {
		observe(value: number): void;
		startTimer(): (labels?: LabelValues<T>) => number;
	}
}

export interface SummaryConfiguration<T extends string> extends MetricConfiguration<T> {
	percentiles?: number[];
	maxAgeSeconds?: number;
	ageBuckets?: number;
	pruneAgedBuckets?: boolean;
	compressCount?: number;
	collect?: CollectFunction<Summary<T>>;
}

export class Summary<T extends string = string> {
	name: string;
	help: string;
	type: 'summary';
	aggregator: Aggregator;
	labelNames: readonly T[];
	constructor(configuration: SummaryConfiguration<T>);
	observe(value: number): void;
	observe(labels: LabelValues<T>, value: number): void;
	get(): Promise<MetricObjectWithValues<MetricValueWithName<T>>>;
	startTimer(labels?: LabelValues<T>): (labels?: LabelValues<T>) => number;
	reset(): void;
	labels(...values: string[]): Summary.Internal<T>;
	labels(labels: LabelValues<T>): Summary.Internal<T>;
	remove(...values: string[]): void;
	remove(labels: LabelValues<T>): void;
}

export namespace Summary {
	interface Internal<T extends string> {
		observe(value: number): void;
		startTimer(): (labels?: LabelValues<T>) => number;
	}
}

export namespace Pushgateway {
	interface Parameters {
		jobName: string;
		groupings?: { [key: string]: string };
	}
}

export class Pushgateway<T extends RegistryContentType = PrometheusContentType> {
	constructor(url: string, options?: any, registry?: Registry<T>);
	pushAdd(params: Pushgateway.Parameters): Promise<{ resp?: unknown; body?: unknown }>;
	push(params: Pushgateway.Parameters): Promise<{ resp?: unknown; body?: unknown }>;
	delete(params: Pushgateway.Parameters): Promise<{ resp?: unknown; body?: unknown }>;
}

export function linearBuckets(start: number, width: number, count: number): number[];
export function exponentialBuckets(start: number, factor: number, count: number): number[];

export interface DefaultMetricsCollectorConfiguration<T extends RegistryContentType = PrometheusContentType> {
	register?: Registry<T>;
	prefix?: string;
	gcDurationBuckets?: readonly number[];
	eventLoopMonitoringPrecision?: number;
	labels?: object;
}

export const collectDefaultMetrics: {
	<T extends RegistryContentType = PrometheusContentType>(config?: DefaultMetricsCollectorConfiguration<T>): void;
	metricsList: string[];
};

export function validateMetricName(name: string): boolean;

export const aggregators: { [key in Aggregator]: (metrics: object[]) => object | undefined };

/** The error the binding throws when the store refuses a call. */
export class ShmetricsError extends Error {
	/** The store's error kind: 'LabelCount', 'InvalidValue', 'StoreFull', 'Conflict', ... */
	readonly code: string;
}

export interface StoreOptions {
	maxSeries?: number;
	maxFamilies?: number;
	labelBytes?: number;
	maxWriters?: number;
}

/** Opens another store for the metrics made from now on. */
export function useStore(path: string, options?: StoreOptions): unknown;

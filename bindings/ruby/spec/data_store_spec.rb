# frozen_string_literal: true

# prometheus-client's store-generic examples (spec/examples/
# data_store_example.rb of the pinned copy) on Shmetrics::DataStore, as the
# peer runs them on its own stores (synchronized_spec.rb).
require "examples/data_store_example"

describe Shmetrics::DataStore do
  subject { ShmetricsSpec.fresh }
  let(:metric_store) { subject.for_metric(:metric_name, metric_type: :counter) }

  it_behaves_like Prometheus::Client::DataStores

  it "refuses settings it does not know" do
    expect do
      subject.for_metric(:metric_name, metric_type: :counter, metric_settings: { some_setting: true })
    end.to raise_error(Shmetrics::DataStore::InvalidStoreSettingsError)
    expect do
      subject.for_metric(:metric_name, metric_type: :counter, metric_settings: { aggregation: :max })
    end.to raise_error(Shmetrics::DataStore::InvalidStoreSettingsError, /Only gauges/)
    expect do
      subject.for_metric(:metric_name, metric_type: :gauge, metric_settings: { aggregation: :avg })
    end.to raise_error(Shmetrics::DataStore::InvalidStoreSettingsError)
  end
end

//! The GenAI client metrics, read with the SDK's in-memory metric exporter: names, units,
//! bucket boundaries, attributes, counts, sums and the buckets the values fell in.

use std::collections::BTreeMap;
use std::time::Duration;

use agentscope_otel::Otel;
use agentscope_otel::metrics::{DURATION_BUCKETS, TOKEN_BUCKETS};
use agentscope_test::{ScriptedModel, ScriptedResponse};
use opentelemetry_sdk::metrics::InMemoryMetricExporter;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, HistogramDataPoint, MetricData};
use opentelemetry_sdk::trace::InMemorySpanExporter;
use serde_json::json;

use crate::in_memory::traced_calculator;

/// One data point: its attributes, and what the histogram holds.
#[derive(Debug, PartialEq)]
struct Point<T> {
    attributes: BTreeMap<String, String>,
    count: u64,
    sum: T,
    min: Option<T>,
    max: Option<T>,
    bounds: Vec<f64>,
    buckets: Vec<u64>,
}

fn point<T: Copy>(data: &HistogramDataPoint<T>) -> Point<T> {
    Point {
        attributes: data
            .attributes()
            .map(|kv| (kv.key.to_string(), kv.value.to_string()))
            .collect(),
        count: data.count(),
        sum: data.sum(),
        min: data.min(),
        max: data.max(),
        bounds: data.bounds().collect(),
        buckets: data.bucket_counts().collect(),
    }
}

/// A bucket count vector with `count` in bucket `at` (of `TOKEN_BUCKETS.len() + 1`).
fn buckets(entries: &[(usize, u64)]) -> Vec<u64> {
    let mut counts = vec![0; TOKEN_BUCKETS.len() + 1];
    for (at, count) in entries {
        counts[*at] = *count;
    }
    counts
}

fn attributes(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[tokio::test]
async fn duration_and_token_usage_histograms_per_model_call() {
    let exporter = InMemoryMetricExporter::default();
    let otel = Otel::builder()
        .span_exporter(InMemorySpanExporter::default())
        .metric_exporter(exporter.clone())
        .build()
        .unwrap();
    let subscriber = {
        use tracing_subscriber::layer::SubscriberExt;
        tracing_subscriber::registry().with(otel.layer())
    };
    let dispatch = tracing::Dispatch::new(subscriber);
    // Two model calls of 60 ms that report usage (10 + 5, then 20 + 3 tokens), and one
    // that fails with HTTP 503 after 60 ms.
    let delay = Duration::from_millis(60);
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "calculator", json!({"expression": "6*7"}))
            .with_usage(10, 5)
            .with_response("r1", "scripted-model-2026")
            .with_delay(delay),
        ScriptedResponse::text("42")
            .with_usage(20, 3)
            .with_response("r2", "scripted-model-2026")
            .with_delay(delay),
        ScriptedResponse::failure(agentscope::ModelError::Status {
            status: 503,
            message: "overloaded".into(),
            retry_after: None,
        })
        .with_delay(delay),
    ]);
    let agent = traced_calculator(model).build().unwrap();
    {
        let _default = tracing::dispatcher::set_default(&dispatch);
        assert_eq!(agent.call("What is 6*7?").await.unwrap().text(), "42");
        agent.call("Again?").await.unwrap_err();
    }
    let guard = otel.into_guard();
    guard.flush().unwrap();
    let exported = exporter.get_finished_metrics().unwrap();
    let last = exported.last().unwrap();
    let scopes: Vec<_> = last.scope_metrics().collect();
    assert_eq!(scopes.len(), 1);
    assert_eq!(scopes[0].scope().name(), "agentscope");
    let metrics: BTreeMap<&str, _> = scopes[0]
        .metrics()
        .map(|metric| (metric.name(), metric))
        .collect();
    assert_eq!(
        metrics.keys().copied().collect::<Vec<_>>(),
        [
            "gen_ai.client.operation.duration",
            "gen_ai.client.token.usage"
        ]
    );

    let succeeded = [
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.provider.name", "_OTHER"),
        ("gen_ai.request.model", "scripted-model"),
        ("gen_ai.response.model", "scripted-model-2026"),
    ];

    // Token usage: input 10 and 20 (buckets (4, 16] and (16, 64]), output 5 and 3 ((4, 16]
    // and (1, 4]); nothing for the failed call.
    let usage = metrics["gen_ai.client.token.usage"];
    assert_eq!(usage.unit(), "{token}");
    let AggregatedMetrics::U64(MetricData::Histogram(histogram)) = usage.data() else {
        panic!("token usage is not a u64 histogram: {:?}", usage.data());
    };
    let mut points: Vec<Point<u64>> = histogram.data_points().map(point).collect();
    points.sort_by(|a, b| a.attributes.cmp(&b.attributes));
    let with_type = |kind| {
        let mut pairs = succeeded.to_vec();
        pairs.push(("gen_ai.token.type", kind));
        attributes(&pairs)
    };
    assert_eq!(
        points,
        [
            Point {
                attributes: with_type("input"),
                count: 2,
                sum: 30,
                min: Some(10),
                max: Some(20),
                bounds: TOKEN_BUCKETS.to_vec(),
                buckets: buckets(&[(2, 1), (3, 1)]),
            },
            Point {
                attributes: with_type("output"),
                count: 2,
                sum: 8,
                min: Some(3),
                max: Some(5),
                bounds: TOKEN_BUCKETS.to_vec(),
                buckets: buckets(&[(1, 1), (2, 1)]),
            },
        ]
    );

    // Duration: the two calls that answered, and the failed one with its error.type; each
    // took at least its 60 ms (never a bucket at or below 0.04 s).
    let duration = metrics["gen_ai.client.operation.duration"];
    assert_eq!(duration.unit(), "s");
    let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = duration.data() else {
        panic!(
            "the duration is not an f64 histogram: {:?}",
            duration.data()
        );
    };
    let mut points: Vec<Point<f64>> = histogram.data_points().map(point).collect();
    points.sort_by(|a, b| a.attributes.cmp(&b.attributes));
    let failed = attributes(&[
        ("error.type", "503"),
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.provider.name", "_OTHER"),
        ("gen_ai.request.model", "scripted-model"),
    ]);
    let shapes: Vec<(&BTreeMap<String, String>, u64)> =
        points.iter().map(|p| (&p.attributes, p.count)).collect();
    assert_eq!(shapes, [(&failed, 1), (&attributes(&succeeded), 2)]);
    for p in &points {
        assert_eq!(p.bounds, DURATION_BUCKETS.to_vec());
        assert_eq!(p.buckets.iter().sum::<u64>(), p.count);
        assert_eq!(p.buckets[..3], [0, 0, 0], "{p:?}");
        let min = p.min.unwrap();
        assert!((0.06..5.0).contains(&min), "{p:?}");
        assert!(p.sum >= 0.06 * p.count as f64, "{p:?}");
    }
}

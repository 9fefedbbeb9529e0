//! Reading a process's Prometheus listener (`/metrics`) in tests.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The whole HTTP response of `GET /metrics` (the listener closes the
/// connection after it); panics unless it is a 200.
pub async fn scrape(addr: SocketAddr) -> String {
    let mut stream = TcpStream::connect(addr)
        .await
        .expect("connecting to /metrics");
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: metrics\r\n\r\n")
        .await
        .expect("asking for /metrics");
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .await
        .expect("reading /metrics");
    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    response
}

/// The value of the series `line_start` (name and labels as rendered), if
/// it is there.
pub fn series_value(metrics: &str, line_start: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(line_start)?.strip_prefix(' '))
        .map(|value| value.parse().expect("a series value"))
}

/// [`series_value`] of a series that must be there.
pub fn series(metrics: &str, line_start: &str) -> f64 {
    series_value(metrics, line_start)
        .unwrap_or_else(|| panic!("no series {line_start} in:\n{metrics}"))
}

/// Every label value of every series (to search for what must never be a
/// label: addresses, subjects, tokens).
pub fn label_values(metrics: &str) -> Vec<String> {
    metrics
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| Some(line.split_once('{')?.1.rsplit_once('}')?.0.to_owned()))
        .flat_map(|labels| {
            labels
                .split("\",")
                .filter_map(|pair| Some(pair.split_once("=\"")?.1.trim_end_matches('"').to_owned()))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_and_labels_are_read_as_rendered() {
        let text = "# TYPE a counter\na_total{kind=\"x\",code=\"250\"} 3\nb 1.5\n";
        assert_eq!(
            series_value(text, "a_total{kind=\"x\",code=\"250\"}"),
            Some(3.0)
        );
        assert_eq!(series(text, "b"), 1.5);
        assert_eq!(series_value(text, "c"), None);
        assert_eq!(label_values(text), vec!["x".to_owned(), "250".to_owned()]);
    }
}

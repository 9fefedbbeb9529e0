//! The one storage failure domain crates see. Adapters convert their own
//! errors into it; the HTTP layer maps `Unavailable` to 503 and the rest to 500.

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No connection could be had in time (pool exhausted, database down).
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// Anything else that went wrong below the domain.
    #[error("storage failure")]
    Failed(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl StoreError {
    pub fn failed(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Failed(Box::new(error))
    }
}

pub mod accounts;
pub mod health;

pub mod accounts;
pub mod activity;
pub mod addresses;
pub mod devices;
pub mod health;
pub mod messages;
pub mod plans;
pub mod webhooks;

DROP TABLE own_domains;

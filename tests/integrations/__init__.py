"""The crawler integrations (urlsan.scrapy, urlsan.spark, urlsan.dask) with real Scrapy, Dask
and Spark."""

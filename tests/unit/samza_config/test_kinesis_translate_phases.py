"""Each step of the Kinesis system's translation on its own (``samza_config/kinesis.py``); ``test_import.py``
checks whole files through ``import_mapping``."""

import pytest

from spark_samza_source.core.errors import ConfigError
from spark_samza_source.core.model import SystemStreamPartition
from spark_samza_source.samza_config.common import Translation
from spark_samza_source.samza_config.kinesis import (
    _Scope,
    chosen_stream,
    ignore_system_keys,
    kcl_settings,
    refuse_kafka_only_inputs,
    translate_credentials,
    translate_endpoints,
    translate_grouping,
    translate_lease_table,
    translate_region,
)

SCOPE = _Scope("kin", "clicks")


def tr(props, stream=None):
    return Translation(props, system="kin", stream=stream, partition_counts=None)


def test_kafka_only_inputs_are_refused_naming_the_key():
    with pytest.raises(ConfigError, match="RegExTopicGenerator"):
        refuse_kafka_only_inputs(tr({}), "kin", {"kin": [("c.*", "job.config.rewriter.r.regex")]}, [])
    with pytest.raises(ConfigError, match="cannot be broadcast"):
        refuse_kafka_only_inputs(tr({}), "kin", {}, [SystemStreamPartition("kin", "clicks", 0)])
    refuse_kafka_only_inputs(tr({}), "kin", {}, [])


def test_chosen_stream_one_input_or_the_one_asked_for():
    assert chosen_stream(tr({}), "kin", ["clicks"]) == "clicks"
    with pytest.raises(ConfigError, match="names 2 Kinesis streams"):
        chosen_stream(tr({}), "kin", ["clicks", "views"])
    asked = tr({}, stream="views")
    assert chosen_stream(asked, "kin", ["clicks", "views"]) == "views"
    assert "stream='clicks'" in asked.ignored["task.inputs (kin.clicks)"]
    with pytest.raises(ConfigError, match="stream='nope' is not an input"):
        chosen_stream(tr({}, stream="nope"), "kin", ["clicks"])


def test_kcl_settings_of_the_stream_override_the_system():
    t = tr({"systems.kin.aws.kcl.TableName": "sys", "systems.kin.streams.clicks.aws.kcl.TableName": " st ",
            "systems.kin.aws.kcl.MaxRecords": "5"})
    assert kcl_settings(t, SCOPE) == {"TableName": ("st", "systems.kin.streams.clicks.aws.kcl.TableName"),
                                      "MaxRecords": ("5", "systems.kin.aws.kcl.MaxRecords")}
    assert "systems.kin.aws.kcl.TableName" in t.used


def test_region_from_kcl_else_stream_else_system():
    t = tr({"systems.kin.aws.region": "eu-west-1", "systems.kin.streams.clicks.aws.region": "us-east-2"})
    translate_region(t, SCOPE, {})
    assert t.options["region"] == "us-east-2" and "systems.kin.aws.region" in t.ignored
    k = tr({"systems.kin.aws.region": "eu-west-1", "systems.kin.aws.kcl.RegionName": "ap-south-1"})
    kcl = kcl_settings(k, SCOPE)
    translate_region(k, SCOPE, kcl)
    assert k.options["region"] == "ap-south-1" and "RegionName" not in kcl
    assert "overridden by systems.kin.aws.kcl.RegionName" in k.ignored["systems.kin.aws.region"]


def test_credentials_only_as_a_pair():
    both = tr({"systems.kin.streams.clicks.aws.accessKey": "AK", "systems.kin.streams.clicks.aws.secretKey": "SK"})
    translate_credentials(both, SCOPE)
    assert set(both.options) == {"awsAccessKeyId", "awsSecretKey"} and not both.rejected
    one = tr({"systems.kin.streams.clicks.aws.accessKey": "AK"})
    translate_credentials(one, SCOPE)
    assert one.options == {} and "go together" in one.rejected["systems.kin.streams.clicks.aws.accessKey"]


def test_endpoints_become_urls():
    t = tr({})
    kcl = {"KinesisEndpoint": ("kinesis.local:4567", "k1"), "DynamoDBEndpoint": ("http://ddb:8000", "k2"),
           "MaxRecords": ("5", "k3")}
    translate_endpoints(t, kcl)
    assert t.options == {"endpointUrl": "https://kinesis.local:4567", "dynamodbEndpointUrl": "http://ddb:8000"}
    assert set(kcl) == {"MaxRecords"}


def test_lease_table_named_or_samza_default_which_stays_soft():
    named = tr({})
    assert translate_lease_table(named, SCOPE, {"TableName": ("leases", "k")}) == "leases"
    assert named.options["startingPosition"] == "kcl" and named.soft == {"startingPosition"}
    default = tr({"job.name": "etl", "job.id": "3"})
    assert translate_lease_table(default, SCOPE, {}) == "etl-3-clicks"
    assert default.soft == {"startingPosition", "kcl.leaseTable"} and "default lease table" in default.notes[0]
    assert translate_lease_table(tr({"app.name": "app"}), SCOPE, {}) == "app-1-clicks"


def test_system_keys_left_over_are_reported_with_a_reason():
    t = tr({"systems.kin.aws.clientConfig.ProxyHost": "p", "systems.kin.samza.offset.default": "oldest",
            "systems.kin.streams.views.x": "1", "systems.kin.streams.clicks.y": "2", "systems.kin.samza.factory": "F",
            "systems.kin.aws.region": "r"})
    t.used.add("systems.kin.aws.region")
    ignore_system_keys(t, SCOPE)
    assert "HTTPS_PROXY" in t.ignored["systems.kin.aws.clientConfig.ProxyHost"]
    assert "ignores Samza checkpoints" in t.ignored["systems.kin.samza.offset.default"]
    assert t.ignored["systems.kin.streams.views.x"] == "stream is not an input of this query"
    assert "no bearing on what is read" in t.ignored["systems.kin.streams.clicks.y"]
    assert "system setting" in t.ignored["systems.kin.samza.factory"]
    assert "systems.kin.aws.region" not in t.ignored


def test_grouping_allows_only_all_ssp_to_single_task():
    with pytest.raises(ConfigError, match="works only with AllSspToSingleTaskGrouperFactory"):
        translate_grouping(tr({"job.systemstreampartition.grouper.factory": "a.GroupByPartitionFactory"}))
    ok = tr({"job.systemstreampartition.grouper.factory": "org.apache.samza.AllSspToSingleTaskGrouperFactory",
             "job.container.count": "4"})
    translate_grouping(ok)
    assert "job.systemstreampartition.grouper.factory" in ok.ignored and "job.container.count" in ok.ignored

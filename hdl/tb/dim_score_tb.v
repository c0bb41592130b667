// Testbench for the generated DimScore (target/hdl/dim_score.v).
//
// Reads one line per clock from +vectors=<file>:
//   start s c in_valid in_fresh in_group in_q in_data flush  (hex)
// applies it, gives one rising edge, and after the edge writes to
// +out=<file> "o <clock> <logit>" for each out_valid and "d <clock>" for
// each done (decimal clock, hex logit), the sampling point of
// hdl::sim::tick. tests/verilog_cosim.rs compares it with the model.
`timescale 1ns / 1ps
module dim_score_tb;
    reg clock = 1'b0;
    reg start = 1'b0;
    reg [15:0] s = 16'd0;
    reg [31:0] c = 32'd0;
    reg in_valid = 1'b0;
    reg in_fresh = 1'b0;
    reg [15:0] in_group = 16'd0;
    reg [31:0] in_q = 32'd0;
    reg [127:0] in_data = 128'd0;
    reg flush = 1'b0;
    wire out_valid;
    wire [31:0] out_logit;
    wire done;
    wire busy;
    wire hazard;

    dim_score dut (
        .clock(clock), .start(start), .s(s), .c(c), .in_valid(in_valid),
        .in_fresh(in_fresh), .in_group(in_group), .in_q(in_q), .in_data(in_data),
        .flush(flush), .out_valid(out_valid), .out_logit(out_logit), .done(done),
        .busy(busy), .hazard(hazard)
    );

    integer fin, fout, n, t;
    reg [8*1024-1:0] vec_path, out_path;

    initial begin
        if (!$value$plusargs("vectors=%s", vec_path) || !$value$plusargs("out=%s", out_path)) begin
            $display("usage: +vectors=<file> +out=<file>");
            $finish;
        end
        fin = $fopen(vec_path, "r");
        fout = $fopen(out_path, "w");
        if (fin == 0 || fout == 0) begin
            $display("cannot open vector or output file");
            $finish;
        end
        t = 0;
        n = $fscanf(fin, "%h %h %h %h %h %h %h %h %h\n", start, s, c, in_valid, in_fresh, in_group, in_q, in_data, flush);
        while (n == 9) begin
            #1 clock = 1'b1;
            #1 clock = 1'b0;
            if (out_valid) $fwrite(fout, "o %0d %h\n", t, out_logit);
            if (done) $fwrite(fout, "d %0d\n", t);
            t = t + 1;
            n = $fscanf(fin, "%h %h %h %h %h %h %h %h %h\n", start, s, c, in_valid, in_fresh, in_group, in_q, in_data, flush);
        end
        $fwrite(fout, "end %0d\n", t);
        $fclose(fout);
        $finish;
    end
endmodule
